pub use uf2fs_core;

//! F2FS on-disk format.

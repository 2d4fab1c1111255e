//! Walks an F2FS image and prints every path with its size and a content checksum.
//! Usage: cargo run -p uf2fs-core --example walk -- IMAGE
use uf2fs_core::{FileKind, Fs};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let image = std::env::args().nth(1).ok_or("usage: walk IMAGE")?;
    let fs = Fs::open(std::path::Path::new(&image), &[])?;
    let mut stack = vec![(b"".to_vec(), fs.root())];
    while let Some((path, dir)) = stack.pop() {
        for e in fs.read_dir(dir)? {
            let p = [path.as_slice(), b"/", &e.name].concat();
            let st = fs.stat(e.ino)?;
            let again = fs.resolve(&p, false)?;
            assert_eq!(again, e.ino, "lookup of {:?}", String::from_utf8_lossy(&p));
            let mut sum = 0u64;
            if st.kind == FileKind::File {
                let mut buf = vec![0u8; 1 << 20];
                let mut off = 0;
                loop {
                    let n = fs.read(e.ino, off, &mut buf)?;
                    if n == 0 {
                        break;
                    }
                    sum = buf[..n]
                        .iter()
                        .fold(sum, |s, &b| s.wrapping_mul(31).wrapping_add(b as u64));
                    off += n as u64;
                }
            }
            let extra = if st.kind == FileKind::Symlink {
                format!(" -> {}", String::from_utf8_lossy(&fs.read_link(e.ino)?))
            } else {
                String::new()
            };
            println!(
                "{:?} {:o} {} {} {:x}{}",
                String::from_utf8_lossy(&p),
                st.mode,
                st.nlink,
                st.size,
                sum,
                extra
            );
            if st.kind == FileKind::Dir {
                stack.push((p, e.ino));
            }
        }
    }
    Ok(())
}

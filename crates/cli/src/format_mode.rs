//! `ls -l` style mode strings such as `-rwxr-xr-x` or `drwxrwxrwt`.

/// The ten-character mode string of `ls -l` for a full `st_mode`.
///
/// The first character names the type (`-` file, `d` directory, `l` symlink, `c`/`b`
/// character/block device, `p` fifo, `s` socket, `?` unknown). Set-user-ID, set-group-ID
/// and sticky bits show as `s`/`S` and `t`/`T` in the execute positions, lower case when
/// the execute bit under them is also set.
pub fn mode_string(mode: u32) -> String {
    let mut out = String::with_capacity(10);
    out.push(type_char(mode));
    let specials = [(0o4000, 's', 'S'), (0o2000, 's', 'S'), (0o1000, 't', 'T')];
    for (class, &(special_bit, with_x, without_x)) in specials.iter().enumerate() {
        let shift = 6 - 3 * class as u32;
        let bits = (mode >> shift) & 0o7;
        out.push(if bits & 0o4 != 0 { 'r' } else { '-' });
        out.push(if bits & 0o2 != 0 { 'w' } else { '-' });
        let exec = bits & 0o1 != 0;
        out.push(match (mode & special_bit != 0, exec) {
            (true, true) => with_x,
            (true, false) => without_x,
            (false, true) => 'x',
            (false, false) => '-',
        });
    }
    out
}

/// The type letter of `ls -l` for the `S_IFMT` bits of `mode`.
fn type_char(mode: u32) -> char {
    match mode & 0o170000 {
        0o100000 => '-',
        0o040000 => 'd',
        0o120000 => 'l',
        0o020000 => 'c',
        0o060000 => 'b',
        0o010000 => 'p',
        0o140000 => 's',
        _ => '?',
    }
}

#[cfg(test)]
mod tests {
    use super::mode_string;

    #[test]
    fn plain_types_and_permissions() {
        assert_eq!(mode_string(0o100755), "-rwxr-xr-x");
        assert_eq!(mode_string(0o100644), "-rw-r--r--");
        assert_eq!(mode_string(0o040700), "drwx------");
        assert_eq!(mode_string(0o120777), "lrwxrwxrwx");
        assert_eq!(mode_string(0o020620), "crw--w----");
        assert_eq!(mode_string(0o060660), "brw-rw----");
        assert_eq!(mode_string(0o010644), "prw-r--r--");
        assert_eq!(mode_string(0o140755), "srwxr-xr-x");
        assert_eq!(mode_string(0o000000), "?---------");
    }

    #[test]
    fn special_bits() {
        assert_eq!(mode_string(0o104755), "-rwsr-xr-x");
        assert_eq!(mode_string(0o104644), "-rwSr--r--");
        assert_eq!(mode_string(0o102755), "-rwxr-sr-x");
        assert_eq!(mode_string(0o102745), "-rwxr-Sr-x");
        assert_eq!(mode_string(0o041777), "drwxrwxrwt");
        assert_eq!(mode_string(0o041776), "drwxrwxrwT");
        assert_eq!(mode_string(0o107000), "---S--S--T");
        assert_eq!(mode_string(0o107777), "-rwsrwsrwt");
    }
}

//! What `uf2fs ls -l` should print, computed independently of the CLI's own code: the
//! mode string and the UTC minute of a timestamp, and a parser for its lines.

/// `ls -l` mode string, e.g. `-rwsr-xr-x`, `drwxrwxrwt`, `lrwxrwxrwx`.
pub fn mode_string(mode: u32) -> String {
    let kind = match mode & 0o170000 {
        0o100000 => '-',
        0o040000 => 'd',
        0o120000 => 'l',
        0o020000 => 'c',
        0o060000 => 'b',
        0o010000 => 'p',
        0o140000 => 's',
        _ => '?',
    };
    let mut s = String::from(kind);
    // (read bit, write bit, exec bit, special bit, letter when exec set, when not)
    let triples = [
        (0o400, 0o200, 0o100, 0o4000, 's', 'S'),
        (0o40, 0o20, 0o10, 0o2000, 's', 'S'),
        (0o4, 0o2, 0o1, 0o1000, 't', 'T'),
    ];
    for (r, w, x, special, on, off) in triples {
        s.push(if mode & r != 0 { 'r' } else { '-' });
        s.push(if mode & w != 0 { 'w' } else { '-' });
        s.push(match (mode & x != 0, mode & special != 0) {
            (true, true) => on,
            (false, true) => off,
            (true, false) => 'x',
            (false, false) => '-',
        });
    }
    s
}

/// `YYYY-MM-DD HH:MM` in UTC for seconds since the epoch (0 ..= 2^32 - 1 is all the tests
/// need), counted year by year and month by month so it cannot share a bug with a
/// closed-form conversion.
pub fn utc_minute(secs: i64) -> String {
    assert!(secs >= 0, "utc_minute only handles times after 1970");
    let mut days = secs / 86_400;
    let rem = secs % 86_400;
    let mut year = 1970;
    loop {
        let len = if is_leap(year) { 366 } else { 365 };
        if days < len {
            break;
        }
        days -= len;
        year += 1;
    }
    let month_days = [
        31,
        if is_leap(year) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let mut month = 0;
    while days >= month_days[month] {
        days -= month_days[month];
        month += 1;
    }
    format!(
        "{year:04}-{:02}-{:02} {:02}:{:02}",
        month + 1,
        days + 1,
        rem / 3600,
        rem % 3600 / 60
    )
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// One parsed `ls -l` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LongLine {
    /// Mode string.
    pub mode: String,
    /// Link count.
    pub nlink: String,
    /// Owner.
    pub uid: String,
    /// Group.
    pub gid: String,
    /// Size column.
    pub size: String,
    /// `YYYY-MM-DD HH:MM`.
    pub mtime: String,
    /// Name, raw bytes (for a symlink, everything before ` -> `).
    pub name: Vec<u8>,
    /// Symlink target (after ` -> `).
    pub target: Option<Vec<u8>>,
}

/// Parses `mode nlink uid gid size YYYY-MM-DD HH:MM name[ -> target]` (columns may be
/// padded with spaces). `is_symlink` decides whether ` -> ` splits the name: a regular
/// name may contain it too.
pub fn parse_long_line(line: &[u8], is_symlink: impl Fn(&[u8]) -> bool) -> Option<LongLine> {
    let mut rest = line;
    let mut fields = Vec::new();
    for _ in 0..7 {
        let start = rest.iter().position(|&c| c != b' ')?;
        rest = &rest[start..];
        let end = rest.iter().position(|&c| c == b' ')?;
        fields.push(String::from_utf8_lossy(&rest[..end]).into_owned());
        rest = &rest[end + 1..];
    }
    let (mut name, mut target) = (rest.to_vec(), None);
    if fields[0].starts_with('l') {
        // The name is the longest prefix before a " -> " that names a symlink.
        let seps: Vec<usize> = rest
            .windows(4)
            .enumerate()
            .filter(|(_, w)| w == b" -> ")
            .map(|(i, _)| i)
            .collect();
        for &i in &seps {
            if is_symlink(&rest[..i]) {
                name = rest[..i].to_vec();
                target = Some(rest[i + 4..].to_vec());
                break;
            }
        }
        if target.is_none() {
            if let Some(&i) = seps.first() {
                name = rest[..i].to_vec();
                target = Some(rest[i + 4..].to_vec());
            }
        }
    }
    Some(LongLine {
        mode: fields[0].clone(),
        nlink: fields[1].clone(),
        uid: fields[2].clone(),
        gid: fields[3].clone(),
        size: fields[4].clone(),
        mtime: format!("{} {}", fields[5], fields[6]),
        name,
        target,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        assert_eq!(mode_string(0o104755), "-rwsr-xr-x");
        assert_eq!(mode_string(0o102644), "-rw-r-Sr--");
        assert_eq!(mode_string(0o041777), "drwxrwxrwt");
        assert_eq!(mode_string(0o041776), "drwxrwxrwT");
        assert_eq!(mode_string(0o120777), "lrwxrwxrwx");
        assert_eq!(mode_string(0o100000), "----------");
    }

    #[test]
    fn times() {
        assert_eq!(utc_minute(0), "1970-01-01 00:00");
        assert_eq!(utc_minute(951_782_400), "2000-02-29 00:00");
        assert_eq!(utc_minute(1_700_000_000), "2023-11-14 22:13");
        assert_eq!(utc_minute(2_147_483_647), "2038-01-19 03:14");
        assert_eq!(utc_minute(4_107_542_400), "2100-03-01 00:00");
        assert_eq!(utc_minute(4_294_967_295), "2106-02-07 06:28");
    }

    #[test]
    fn parse() {
        let l = parse_long_line(b"-rw-r--r--  1 0 0 12 2023-11-14 22:13 a b -> c", |_| false).unwrap();
        assert_eq!(l.name, b"a b -> c");
        assert_eq!(l.size, "12");
        let l = parse_long_line(b"lrwxrwxrwx 1 0 0 1 2023-11-14 22:13 x -> y -> z", |n| n == b"x -> y").unwrap();
        assert_eq!((l.name, l.target), (b"x -> y".to_vec(), Some(b"z".to_vec())));
    }
}

//! Parsing `mount -o` option lists.

/// Mount options as given with `-o` (possibly several times, each comma-separated).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedMountOptions {
    /// `ro` (cleared again by a later `rw`).
    pub read_only: bool,
    /// `allow_other`.
    pub allow_other: bool,
    /// `fsname=NAME`: the source name shown by `mount`.
    pub fsname: Option<String>,
}

/// Parses option groups such as `["ro,allow_other", "fsname=disk"]`. Later options win;
/// empty items (as in `ro,,x`) are ignored. The error is the message to show.
pub fn parse_mount_options(groups: &[String]) -> Result<ParsedMountOptions, String> {
    let mut parsed = ParsedMountOptions::default();
    for option in groups.iter().flat_map(|group| group.split(',')) {
        match option {
            "" => {}
            "ro" => parsed.read_only = true,
            "rw" => parsed.read_only = false,
            "allow_other" => parsed.allow_other = true,
            _ => match option.strip_prefix("fsname=") {
                Some("") => return Err("mount option 'fsname=' needs a name".to_string()),
                Some(name) => parsed.fsname = Some(name.to_string()),
                None => return Err(format!("unknown mount option '{option}'")),
            },
        }
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(groups: &[&str]) -> Result<ParsedMountOptions, String> {
        parse_mount_options(&groups.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn known_options() {
        assert_eq!(parse(&[]).unwrap(), ParsedMountOptions::default());
        let all = parse(&["ro,allow_other", "fsname=my disk"]).unwrap();
        assert_eq!(
            all,
            ParsedMountOptions {
                read_only: true,
                allow_other: true,
                fsname: Some("my disk".into())
            }
        );
        assert!(!parse(&["ro,rw"]).unwrap().read_only);
        assert!(parse(&["rw,,ro,"]).unwrap().read_only);
        assert_eq!(parse(&["fsname=a=b"]).unwrap().fsname.as_deref(), Some("a=b"));
    }

    #[test]
    fn unknown_options_are_named() {
        assert_eq!(parse(&["ro,noexec"]).unwrap_err(), "unknown mount option 'noexec'");
        assert_eq!(parse(&["RO"]).unwrap_err(), "unknown mount option 'RO'");
        assert_eq!(parse(&["fsname"]).unwrap_err(), "unknown mount option 'fsname'");
        assert!(parse(&["fsname="]).is_err());
    }
}

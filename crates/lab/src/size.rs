//! Sizes on the command line (`128G`, `8M`, `4096`) and in reports (`31187 MiB`).

/// Parses a size: a whole number of bytes, or a whole number with a K, M, G or T suffix
/// (powers of 1024; `KiB`, `KB` and lower case are accepted too).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    if number.is_empty() {
        return Err(format!(
            "'{text}' is not a size (a whole number of bytes, or one with a K, M, G or T suffix)"
        ));
    }
    let n: u64 = number.parse().map_err(|_| format!("'{text}' is too large"))?;
    let unit = unit.trim_start();
    let unit = unit
        .strip_suffix("iB")
        .or_else(|| unit.strip_suffix("ib"))
        .or_else(|| unit.strip_suffix(['B', 'b']))
        .unwrap_or(unit);
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(format!("'{text}': unknown size suffix '{unit}' (use K, M, G or T)")),
    };
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("'{text}' is too large"))
}

/// Shows a size exactly in the largest binary unit that divides it (`8 MiB`,
/// `31187 MiB`, `5000 B`), so that it can be pasted back as an option.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(u32, &str); 4] = [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")];
    for (shift, name) in UNITS {
        if bytes >= 1 << shift && bytes % (1 << shift) == 0 {
            return format!("{} {name}", bytes >> shift);
        }
    }
    format!("{bytes} B")
}

/// The same size as an option value (`8M`, `31187M`, `5000`).
pub fn size_arg(bytes: u64) -> String {
    const UNITS: [(u32, &str); 4] = [(40, "T"), (30, "G"), (20, "M"), (10, "K")];
    for (shift, name) in UNITS {
        if bytes >= 1 << shift && bytes % (1 << shift) == 0 {
            return format!("{}{name}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// Bytes as GiB, for tables and plots.
pub fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_are_powers_of_1024() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("8M"), Ok(8 << 20));
        assert_eq!(parse_size("8MiB"), Ok(8 << 20));
        assert_eq!(parse_size("8 MB"), Ok(8 << 20));
        assert_eq!(parse_size("128G"), Ok(128 << 30));
        assert_eq!(parse_size("2T"), Ok(2 << 40));
        assert_eq!(parse_size(" 31187m "), Ok(31187 << 20));
    }

    #[test]
    fn bad_sizes_say_why() {
        for bad in ["", "M", "-1", "1.5G", "12Q", "8MX", "1e9"] {
            let e = parse_size(bad).unwrap_err();
            assert!(e.contains(&format!("'{bad}'")), "{bad}: {e}");
        }
        assert!(parse_size("99999999999999999999").unwrap_err().contains("too large"));
        assert!(parse_size("17179869184T").unwrap_err().contains("too large"));
    }

    #[test]
    fn sizes_show_exactly_and_parse_back() {
        for (bytes, shown, arg) in [
            (8u64 << 20, "8 MiB", "8M"),
            (31187 << 20, "31187 MiB", "31187M"),
            (128 << 30, "128 GiB", "128G"),
            (1536 << 10, "1536 KiB", "1536K"),
            (5000, "5000 B", "5000"),
            (0, "0 B", "0"),
        ] {
            assert_eq!(format_size(bytes), shown);
            assert_eq!(size_arg(bytes), arg);
            assert_eq!(parse_size(arg), Ok(bytes));
        }
    }
}

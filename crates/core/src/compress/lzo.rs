//! LZO1X decompression for F2FS's `lzo` and `lzo-rle` clusters.
//!
//! Written from the stream description in Linux's Documentation/staging/lzo.rst, which
//! documents what the kernel's decompressor accepts: bitstream version 0 (plain LZO1X,
//! as liblzo2's `lzo1x_1` writes it) and version 1 (LZO-RLE: a stream that starts with
//! the bytes 17, 1 and may encode runs of zeros). One decoder reads both, as the
//! kernel's does. No crate decodes version 1, which is why this one exists.
//!
//! The decoder is strict the way the kernel's is: every instruction must fit the input
//! and the output, a copy may not reach before the start of the output, and the stream
//! must end with the end-of-stream marker as its last three bytes.

/// Why a stream could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LzoError {
    /// The stream ends in the middle of an instruction.
    InputOverrun,
    /// The stream decodes to more bytes than the output holds.
    OutputOverrun,
    /// A copy reaches before the start of the output.
    LookBehindOverrun,
    /// Bytes follow the end-of-stream marker.
    InputNotConsumed,
    /// The end-of-stream marker is malformed.
    BadEnd,
}

impl std::fmt::Display for LzoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LzoError::InputOverrun => "LZO stream ends inside an instruction",
            LzoError::OutputOverrun => "LZO stream decodes to more bytes than the cluster holds",
            LzoError::LookBehindOverrun => "LZO copy reaches before the start of the output",
            LzoError::InputNotConsumed => "bytes follow the LZO end-of-stream marker",
            LzoError::BadEnd => "malformed LZO end-of-stream marker",
        })
    }
}

/// Shortest zero run an LZO-RLE instruction encodes.
const MIN_ZERO_RUN: usize = 4;

struct Input<'a> {
    src: &'a [u8],
    at: usize,
}

impl Input<'_> {
    fn byte(&mut self) -> Result<u8, LzoError> {
        let b = *self.src.get(self.at).ok_or(LzoError::InputOverrun)?;
        self.at += 1;
        Ok(b)
    }

    fn le16(&mut self) -> Result<usize, LzoError> {
        let lo = self.byte()? as usize;
        let hi = self.byte()? as usize;
        Ok(lo | hi << 8)
    }

    fn peek_le16(&self) -> Option<usize> {
        let b = self.src.get(self.at..self.at + 2)?;
        Some(b[0] as usize | (b[1] as usize) << 8)
    }

    /// A length whose operand bits were all zero: `base`, plus 255 per zero byte, plus
    /// the first non-zero byte.
    fn long_length(&mut self, base: usize) -> Result<usize, LzoError> {
        let mut n = base;
        loop {
            match self.byte()? {
                0 => n += 255,
                b => return Ok(n + b as usize),
            }
        }
    }
}

struct Output<'a> {
    dst: &'a mut [u8],
    at: usize,
}

impl Output<'_> {
    fn literals(&mut self, input: &mut Input<'_>, n: usize) -> Result<(), LzoError> {
        let src = input.src.get(input.at..input.at + n).ok_or(LzoError::InputOverrun)?;
        let dst = self.dst.get_mut(self.at..self.at + n).ok_or(LzoError::OutputOverrun)?;
        dst.copy_from_slice(src);
        input.at += n;
        self.at += n;
        Ok(())
    }

    fn copy(&mut self, distance: usize, len: usize) -> Result<(), LzoError> {
        if distance == 0 || distance > self.at {
            return Err(LzoError::LookBehindOverrun);
        }
        if len > self.dst.len() - self.at {
            return Err(LzoError::OutputOverrun);
        }
        let from = self.at - distance;
        if distance >= len {
            self.dst.copy_within(from..from + len, self.at);
        } else {
            // Overlapping: the copy repeats the last `distance` bytes.
            for i in 0..len {
                self.dst[self.at + i] = self.dst[from + i];
            }
        }
        self.at += len;
        Ok(())
    }

    fn zeros(&mut self, len: usize) -> Result<(), LzoError> {
        let dst = self
            .dst
            .get_mut(self.at..self.at + len)
            .ok_or(LzoError::OutputOverrun)?;
        dst.fill(0);
        self.at += len;
        Ok(())
    }
}

/// Decodes the LZO1X stream `src` (either bitstream version) into `dst`; returns the
/// number of bytes written.
pub fn decompress(src: &[u8], dst: &mut [u8]) -> Result<usize, LzoError> {
    if src.len() < 3 {
        return Err(LzoError::InputOverrun);
    }
    let mut input = Input { src, at: 0 };
    let mut out = Output { dst, at: 0 };
    // A versioned stream (at least 5 bytes) starts with 17 and the version.
    let mut rle = false;
    if src.len() >= 5 && src[0] == 17 {
        rle = src[1] != 0;
        input.at = 2;
    }
    // The first byte may start with a literal run (there is no dictionary yet).
    // `state`: literals the last instruction copied (0 to 3), or 4 for a longer run.
    let mut state = 0usize;
    let first = *src.get(input.at).ok_or(LzoError::InputOverrun)?;
    if first > 17 {
        input.at += 1;
        let n = (first - 17) as usize;
        out.literals(&mut input, n)?;
        state = n.min(4);
    }
    loop {
        let t = input.byte()? as usize;
        let (distance, len, next_literals);
        if t >= 64 {
            // Copy of 3 to 8 bytes within 2 KiB.
            len = if t >= 128 {
                5 + ((t >> 5) & 3)
            } else {
                3 + ((t >> 5) & 1)
            };
            let h = input.byte()? as usize;
            distance = (h << 3) + ((t >> 2) & 7) + 1;
            next_literals = t & 3;
        } else if t >= 32 {
            // Copy within 16 KiB.
            len = match t & 31 {
                0 => input.long_length(2 + 31)?,
                l => 2 + l,
            };
            let d = input.le16()?;
            distance = (d >> 2) + 1;
            next_literals = d & 3;
        } else if t >= 16 {
            // Copy within 16 to 48 KiB, the end of the stream, or (version 1) a run of
            // zeros: instruction 0001 1LLL followed by 0xfc|S, 0xff and the run's
            // high bits.
            if rle && t & 0xf8 == 0x18 && input.peek_le16().is_some_and(|d| d & 0xfffc == 0xfffc) {
                let d = input.le16()?;
                let x = input.byte()? as usize;
                out.zeros((x << 3 | (t & 7)) + MIN_ZERO_RUN)?;
                let s = d & 3;
                out.literals(&mut input, s)?;
                state = s;
                continue;
            }
            len = match t & 7 {
                0 => input.long_length(2 + 7)?,
                l => 2 + l,
            };
            let d = input.le16()?;
            distance = 16384 + ((t & 8) << 11) + (d >> 2);
            if distance == 16384 {
                if len != 3 || d & 3 != 0 {
                    return Err(LzoError::BadEnd);
                }
                if input.at != src.len() {
                    return Err(LzoError::InputNotConsumed);
                }
                return Ok(out.at);
            }
            next_literals = d & 3;
        } else {
            match state {
                0 => {
                    // A literal run of 4 or more bytes.
                    let n = match t {
                        0 => input.long_length(3 + 15)?,
                        l => 3 + l,
                    };
                    out.literals(&mut input, n)?;
                    state = 4;
                    continue;
                }
                1..=3 => {
                    let h = input.byte()? as usize;
                    distance = (h << 2) + ((t >> 2) & 3) + 1;
                    len = 2;
                }
                _ => {
                    let h = input.byte()? as usize;
                    distance = (h << 2) + ((t >> 2) & 3) + 2049;
                    len = 3;
                }
            }
            next_literals = t & 3;
        }
        out.copy(distance, len)?;
        out.literals(&mut input, next_literals)?;
        state = next_literals;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(src: &[u8], cap: usize) -> Result<Vec<u8>, LzoError> {
        let mut out = vec![0u8; cap];
        let n = decompress(src, &mut out)?;
        out.truncate(n);
        Ok(out)
    }

    #[test]
    fn a_literal_only_stream() {
        // liblzo2's lzo1x_1 output for "hello, lzo world!": a 17-byte literal run and
        // the end-of-stream marker.
        let mut s = vec![17 + 17];
        s.extend_from_slice(b"hello, lzo world!");
        s.extend_from_slice(&[17, 0, 0]);
        assert_eq!(run(&s, 64).unwrap(), b"hello, lzo world!");
        // The output must hold it all.
        assert_eq!(run(&s, 10), Err(LzoError::OutputOverrun));
    }

    #[test]
    fn matches_copy_from_the_output_overlapping_or_not() {
        // "abcd" then a 2 KiB-window copy (0 1 L D D D S S: length 3 + L, distance
        // (H << 3) + D + 1): length 4, distance 4 -> "abcdabcd", then an overlapping
        // 8-byte copy at distance 2 (1 L L D D D S S: length 5 + 3, D = 1, H = 0).
        let s = [17 + 4, b'a', b'b', b'c', b'd', 0b0110_1100, 0, 0b1110_0100, 0, 17, 0, 0];
        assert_eq!(run(&s, 64).unwrap(), b"abcdabcdcdcdcdcd");
    }

    #[test]
    fn long_lengths_add_255_per_zero_byte() {
        // state 0 after a 0-literal start: 0000 0000, then one zero byte and 7: a
        // literal run of 3 + 15 + 255 + 7 = 280 bytes.
        let mut s = vec![0u8, 0, 7];
        let lits: Vec<u8> = (0..280u32).map(|i| (i * 7) as u8).collect();
        s.extend_from_slice(&lits);
        s.extend_from_slice(&[17, 0, 0]);
        assert_eq!(run(&s, 400).unwrap(), lits);
    }

    #[test]
    fn version_1_runs_of_zeros() {
        // 17, 1 (LZO-RLE), 2 literals, a zero run of (12 << 3 | 5) + 4 = 105 bytes
        // followed by 1 literal (S = 1), then the end.
        let s = [17, 1, 17 + 2, b'a', b'b', 0x18 | 5, 0xfc | 1, 0xff, 12, b'z', 17, 0, 0];
        let mut want = b"ab".to_vec();
        want.extend(std::iter::repeat_n(0u8, 105));
        want.push(b'z');
        assert_eq!(run(&s, 200).unwrap(), want);
        // Version 0 reads the same bytes as a 16..48 KiB copy, which reaches before
        // the start of the output.
        let mut v0 = s;
        v0[1] = 0;
        assert_eq!(run(&v0, 200), Err(LzoError::LookBehindOverrun));
    }

    #[test]
    fn malformed_streams_are_errors() {
        assert_eq!(run(&[], 10), Err(LzoError::InputOverrun));
        assert_eq!(run(&[17, 0], 10), Err(LzoError::InputOverrun));
        // Literal run longer than the input.
        assert_eq!(run(&[17 + 9, 1, 2, 17, 0, 0], 64), Err(LzoError::InputOverrun));
        // Trailing bytes after the end.
        assert_eq!(run(&[18, b'x', 17, 0, 0, 9], 64), Err(LzoError::InputNotConsumed));
        // An end marker of the wrong length.
        assert_eq!(run(&[18, b'x', 18, 0, 0], 64), Err(LzoError::BadEnd));
        // No end marker at all.
        assert_eq!(run(&[18, b'x', 0x40, 0], 64), Err(LzoError::InputOverrun));
        // A copy before any output.
        assert_eq!(
            run(&[18, b'x', 0x40, 1, 17, 0, 0], 64),
            Err(LzoError::LookBehindOverrun)
        );
        // Every truncation of a valid stream fails cleanly.
        let s = [17, 1, 17 + 2, b'a', b'b', 0x18 | 5, 0xfc | 1, 0xff, 12, b'z', 17, 0, 0];
        for n in 0..s.len() {
            assert!(run(&s[..n], 200).is_err(), "prefix of {n} bytes decoded");
        }
    }
}

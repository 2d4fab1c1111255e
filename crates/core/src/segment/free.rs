//! Free segment and section maps (the kernel's `free_segmap` and `free_secmap`).
//!
//! A segment is *in use* while it has valid blocks, is an active log's segment, or is
//! prefree (emptied since the last checkpoint); otherwise it is free. A section is free
//! when all its segments are. Only wholly free sections are handed to a log that needs
//! a new section.

/// A fixed-size bitset.
#[derive(Debug, Clone)]
struct BitSet {
    words: Vec<u64>,
    len: usize,
}

impl BitSet {
    fn new(len: usize) -> BitSet {
        BitSet {
            words: vec![0; len.div_ceil(64)],
            len,
        }
    }

    fn get(&self, i: usize) -> bool {
        self.words[i / 64] >> (i % 64) & 1 != 0
    }

    fn set(&mut self, i: usize, on: bool) {
        let (w, b) = (i / 64, i % 64);
        if on {
            self.words[w] |= 1 << b;
        } else {
            self.words[w] &= !(1 << b);
        }
    }

    /// First clear bit in `from..to`, scanning a word at a time.
    fn first_clear(&self, from: usize, to: usize) -> Option<usize> {
        let to = to.min(self.len);
        let mut i = from;
        while i < to {
            let word = self.words[i / 64] | ((1u64 << (i % 64)) - 1);
            if word == u64::MAX {
                i = (i / 64 + 1) * 64;
                continue;
            }
            let found = (i / 64) * 64 + (!word).trailing_zeros() as usize;
            return (found < to).then_some(found);
        }
        None
    }
}

/// Which segments and sections are free.
#[derive(Debug, Clone)]
pub struct FreeMap {
    segs_per_sec: u32,
    seg_used: BitSet,
    /// Segments in use per section.
    sec_used_segs: Vec<u32>,
    sec_used: BitSet,
    free_segs: u32,
    free_secs: u32,
}

impl FreeMap {
    /// All `segments` free, grouped `segs_per_sec` to a section.
    pub fn new(segments: u32, segs_per_sec: u32) -> FreeMap {
        let sections = segments.div_ceil(segs_per_sec) as usize;
        FreeMap {
            segs_per_sec,
            seg_used: BitSet::new(segments as usize),
            sec_used_segs: vec![0; sections],
            sec_used: BitSet::new(sections),
            free_segs: segments,
            free_secs: sections as u32,
        }
    }

    /// Marks `segno` in use or free; no-op when already so.
    pub fn set_used(&mut self, segno: u32, used: bool) {
        if self.seg_used.get(segno as usize) == used {
            return;
        }
        self.seg_used.set(segno as usize, used);
        let sec = (segno / self.segs_per_sec) as usize;
        let was_free = self.sec_used_segs[sec] == 0;
        if used {
            self.free_segs -= 1;
            self.sec_used_segs[sec] += 1;
            self.sec_used.set(sec, true);
        } else {
            self.free_segs += 1;
            self.sec_used_segs[sec] -= 1;
            self.sec_used.set(sec, self.sec_used_segs[sec] > 0);
        }
        let now_free = self.sec_used_segs[sec] == 0;
        match (was_free, now_free) {
            (true, false) => self.free_secs -= 1,
            (false, true) => self.free_secs += 1,
            _ => {}
        }
    }

    /// Whether `segno` is free.
    pub fn is_free(&self, segno: u32) -> bool {
        !self.seg_used.get(segno as usize)
    }

    /// Whether section `secno` is wholly free.
    #[cfg(test)]
    pub fn section_is_free(&self, secno: u32) -> bool {
        !self.sec_used.get(secno as usize)
    }

    /// Free segments.
    pub fn free_segments(&self) -> u32 {
        self.free_segs
    }

    /// Wholly free sections.
    pub fn free_sections(&self) -> u32 {
        self.free_secs
    }

    /// The next free segment after `segno` in its own section.
    pub fn next_free_in_section(&self, segno: u32) -> Option<u32> {
        let end = (segno / self.segs_per_sec + 1) * self.segs_per_sec;
        self.seg_used
            .first_clear(segno as usize + 1, end as usize)
            .map(|s| s as u32)
    }

    /// The first wholly free section at or after `start`, wrapping around, that
    /// `acceptable` accepts.
    pub fn find_free_section(&self, start: u32, acceptable: &dyn Fn(u32) -> bool) -> Option<u32> {
        let n = self.sec_used.len;
        let start = (start as usize).min(n);
        for (from, to) in [(start, n), (0, start)] {
            let mut at = from;
            while let Some(sec) = self.sec_used.first_clear(at, to) {
                if acceptable(sec as u32) {
                    return Some(sec as u32);
                }
                at = sec + 1;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_free_only_when_all_segments_are() {
        let mut m = FreeMap::new(8, 4);
        assert_eq!(m.free_segments(), 8);
        m.set_used(1, true);
        m.set_used(1, true);
        assert_eq!(m.free_segments(), 7);
        assert_eq!(m.free_sections(), 1);
        assert!(!m.section_is_free(0) && m.section_is_free(1));
        assert_eq!(m.next_free_in_section(1), Some(2));
        assert_eq!(m.next_free_in_section(3), None);
        assert_eq!(m.find_free_section(0, &|_| true), Some(1));
        assert_eq!(m.find_free_section(1, &|s| s != 1), None);
        m.set_used(1, false);
        assert!(m.section_is_free(0));
        assert_eq!(m.find_free_section(1, &|s| s != 1), Some(0));
    }

    #[test]
    fn first_clear_crosses_words() {
        let mut b = BitSet::new(200);
        for i in 0..130 {
            b.set(i, true);
        }
        assert_eq!(b.first_clear(0, 200), Some(130));
        assert_eq!(b.first_clear(5, 100), None);
        assert_eq!(b.first_clear(131, 200), Some(131));
        b.set(199, true);
        assert_eq!(b.first_clear(199, 200), None);
    }
}

//! Blocks held in memory by address, for the sparse memory devices: a two-level table
//! (chunks of [`CHUNK`] slots, made when a block of theirs is first kept and dropped
//! when their last one goes), so a lookup is two indexings, not a hash, and a device
//! of many blocks costs memory only where blocks are kept.

/// Slots per chunk of the table.
const CHUNK: usize = 1024;

/// One block's contents, shareable with whoever wrote or read it (see
/// [`super::SharedBlock`]).
pub(crate) type Block = super::SharedBlock;

/// A chunk: its slots and how many hold a block.
struct Chunk {
    slots: Box<[Option<Block>]>,
    used: usize,
}

/// Blocks by address (see the module notes).
#[derive(Default)]
pub(crate) struct BlockTable {
    chunks: Vec<Option<Chunk>>,
    len: usize,
}

fn split(addr: u64) -> (usize, usize) {
    ((addr / CHUNK as u64) as usize, (addr % CHUNK as u64) as usize)
}

impl BlockTable {
    /// Blocks held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The block at `addr`, if held.
    pub(crate) fn get(&self, addr: u64) -> Option<&Block> {
        let (c, i) = split(addr);
        self.chunks.get(c)?.as_ref()?.slots[i].as_ref()
    }

    /// The block at `addr`, if held, to change in place.
    pub(crate) fn get_mut(&mut self, addr: u64) -> Option<&mut Block> {
        let (c, i) = split(addr);
        self.chunks.get_mut(c)?.as_mut()?.slots[i].as_mut()
    }

    /// Holds `block` at `addr`; returns the block it replaces.
    pub(crate) fn insert(&mut self, addr: u64, block: Block) -> Option<Block> {
        let (c, i) = split(addr);
        if self.chunks.len() <= c {
            self.chunks.resize_with(c + 1, || None);
        }
        let chunk = self.chunks[c].get_or_insert_with(|| Chunk {
            slots: (0..CHUNK).map(|_| None).collect(),
            used: 0,
        });
        let old = chunk.slots[i].replace(block);
        if old.is_none() {
            chunk.used += 1;
            self.len += 1;
        }
        old
    }

    /// Drops the block at `addr`; returns it.
    pub(crate) fn remove(&mut self, addr: u64) -> Option<Block> {
        let (c, i) = split(addr);
        let slot = self.chunks.get_mut(c)?;
        let chunk = slot.as_mut()?;
        let old = chunk.slots[i].take()?;
        chunk.used -= 1;
        self.len -= 1;
        if chunk.used == 0 {
            *slot = None;
        }
        Some(old)
    }

    /// Drops every block of `start..end`, handing each to `gone`.
    pub(crate) fn remove_range(&mut self, start: u64, end: u64, gone: &mut dyn FnMut(Block)) {
        let end = end.min((self.chunks.len() * CHUNK) as u64);
        let mut addr = start;
        while addr < end {
            let (c, _) = split(addr);
            let chunk_end = ((c as u64) + 1) * CHUNK as u64;
            if self.chunks.get(c).is_some_and(|x| x.is_some()) {
                for a in addr..chunk_end.min(end) {
                    if let Some(b) = self.remove(a) {
                        gone(b);
                    }
                }
            }
            addr = chunk_end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(v: u8) -> Block {
        std::sync::Arc::new(vec![v; 8])
    }

    #[test]
    fn holds_replaces_and_drops_blocks_and_their_chunks() {
        let mut t = BlockTable::default();
        assert!(t.get(5).is_none() && t.remove(5).is_none());
        assert!(t.insert(5, block(1)).is_none());
        assert!(t.insert(3 * CHUNK as u64 + 7, block(2)).is_none());
        assert_eq!(t.insert(5, block(3)).unwrap()[0], 1);
        assert_eq!((t.len(), t.get(5).unwrap()[0]), (2, 3));
        std::sync::Arc::make_mut(t.get_mut(5).unwrap())[0] = 4;
        assert_eq!(t.remove(5).unwrap()[0], 4);
        assert!(t.chunks[0].is_none(), "an empty chunk is dropped");
        for a in [CHUNK as u64 - 1, CHUNK as u64, 2 * CHUNK as u64 + 1] {
            t.insert(a, block(9));
        }
        let mut gone = Vec::new();
        t.remove_range(CHUNK as u64 - 1, 3 * CHUNK as u64 + 7, &mut |b| gone.push(b[0]));
        assert_eq!((gone, t.len()), (vec![9, 9, 9], 1));
        assert_eq!(t.get(3 * CHUNK as u64 + 7).unwrap()[0], 2);
        t.remove_range(0, u64::MAX, &mut |_| {});
        assert_eq!(t.len(), 0);
    }
}

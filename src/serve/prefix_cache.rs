//! The prefix cache: full KV blocks found again by their content, shared read-only between
//! sequences. It owns the block pool, because it decides what happens to a block nobody holds any
//! more: a cached block stays idle (its KV still valid, findable) until the pool runs out of free
//! blocks, then the least recently used idle block is evicted and handed out.
//!
//! Keys: a hash chain. A block's key is SHA-256(parent key || its token ids, little-endian u32),
//! truncated to 128 bits; the first block's parent is `BlockKey::ROOT`. So a key names the whole
//! prefix up to the end of its block, and a lookup walks the prompt block by block from the root,
//! stopping at the first miss. Collisions: we rely on the 128-bit key for the chain (two different
//! prefixes meet with probability about n^2 / 2^129 for n cached blocks: 2^-65 at four billion) and
//! also compare the block's own token ids on every hit, so a collision on the last link is a miss,
//! never a wrong block.
use super::block_pool::{BlockId, BlockPool};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};

/// 128 bits naming a block's whole prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BlockKey(pub [u8; 16]);

impl BlockKey {
    /// The parent of a sequence's first block.
    pub const ROOT: BlockKey = BlockKey([0; 16]);

    /// The key of a block holding `tokens` after the prefix named `parent`.
    pub fn chain(parent: &BlockKey, tokens: &[u32]) -> BlockKey {
        let mut h = Sha256::new();
        h.update(parent.0);
        for t in tokens {
            h.update(t.to_le_bytes());
        }
        let d = h.finalize();
        let mut k = [0u8; 16];
        k.copy_from_slice(&d[..16]);
        BlockKey(k)
    }
}

struct Entry {
    key: BlockKey,
    tokens: Vec<u32>,
    /// the tick it went idle (its place in `idle`)
    idle_since: u64,
}

/// Full blocks by key, with LRU eviction of the idle ones. Switched off (`enabled == false`) it is
/// a plain pass-through to the pool: nothing is looked up, registered or kept.
pub struct PrefixCache {
    pool: BlockPool,
    enabled: bool,
    map: HashMap<BlockKey, BlockId>,
    /// per block: Some when the block is cached (held or idle)
    entries: Vec<Option<Entry>>,
    /// idle cached blocks (count 0) by the tick they went idle: the first is the least recently used
    idle: BTreeMap<u64, BlockId>,
    tick: u64,
    pub(super) hits: u64,
    pub(super) misses: u64,
    pub(super) evictions: u64,
}

impl PrefixCache {
    pub fn new(pool: BlockPool, enabled: bool) -> Self {
        let n = pool.num_blocks();
        PrefixCache {
            pool,
            enabled,
            map: HashMap::new(),
            entries: (0..n).map(|_| None).collect(),
            idle: BTreeMap::new(),
            tick: 0,
            hits: 0,
            misses: 0,
            evictions: 0,
        }
    }
    pub fn pool(&self) -> &BlockPool {
        &self.pool
    }
    pub fn enabled(&self) -> bool {
        self.enabled
    }
    pub fn block_size(&self) -> usize {
        self.pool.block_size()
    }
    /// Idle cached blocks: held by nobody, reclaimable.
    pub fn num_idle(&self) -> usize {
        self.idle.len()
    }
    /// Blocks an allocation can get now: free ones and idle cached ones.
    pub fn available(&self) -> usize {
        self.pool.num_free() + self.idle.len()
    }
    pub fn is_cached(&self, b: BlockId) -> bool {
        self.entries[b as usize].is_some()
    }
    /// The token ids a cached block holds.
    pub fn cached_tokens(&self, b: BlockId) -> Option<&[u32]> {
        self.entries[b as usize].as_ref().map(|e| e.tokens.as_slice())
    }
    pub fn is_idle(&self, b: BlockId) -> bool {
        self.entries[b as usize]
            .as_ref()
            .is_some_and(|e| self.idle.get(&e.idle_since) == Some(&b))
    }
    pub(super) fn idle_blocks(&self) -> impl Iterator<Item = BlockId> + '_ {
        self.idle.values().copied()
    }
    pub fn num_cached(&self) -> usize {
        self.map.len()
    }

    /// A block for a new owner (count 1): a free one, else the least recently used idle cached
    /// block, evicted (its key forgotten). None when every block is held.
    pub fn allocate(&mut self) -> Option<BlockId> {
        if let Some(b) = self.pool.allocate() {
            return Some(b);
        }
        let (_, b) = self.idle.pop_first()?;
        let e = self.entries[b as usize].take().expect("an idle block is cached");
        self.map.remove(&e.key);
        self.evictions += 1;
        self.pool.take_idle(b);
        Some(b)
    }

    /// One holder of `b` less. At count 0 a cached block goes idle (most recently used), any other
    /// block back to the free list.
    pub fn release(&mut self, b: BlockId) {
        if self.pool.release(b) > 0 {
            return;
        }
        match &mut self.entries[b as usize] {
            Some(e) => {
                self.tick += 1;
                e.idle_since = self.tick;
                self.idle.insert(self.tick, b);
            }
            None => self.pool.free(b),
        }
    }

    /// The cached blocks that hold `tokens`' leading full blocks, at most `max_blocks` of them,
    /// each retained for the caller (who must `release` them). Counts nothing: the scheduler
    /// counts hits and misses when it admits the sequence (`record`), so a sequence that waits for
    /// blocks and is looked up again is not counted twice.
    pub fn lookup(&mut self, tokens: &[u32], max_blocks: usize) -> Vec<(BlockId, BlockKey)> {
        let mut out = Vec::new();
        if !self.enabled {
            return out;
        }
        let bs = self.block_size();
        let mut parent = BlockKey::ROOT;
        for chunk in tokens.chunks_exact(bs).take(max_blocks) {
            let key = BlockKey::chain(&parent, chunk);
            let Some(&b) = self.map.get(&key) else { break };
            if self.entries[b as usize].as_ref().map(|e| e.tokens.as_slice()) != Some(chunk) {
                break; // a collision on this link: a miss, not a wrong block
            }
            self.acquire(b);
            out.push((b, key));
            parent = key;
        }
        out
    }

    fn acquire(&mut self, b: BlockId) {
        if self.pool.refcount(b) == 0 {
            let since = self.entries[b as usize].as_ref().expect("cached").idle_since;
            let was = self.idle.remove(&since);
            debug_assert_eq!(was, Some(b));
            self.pool.take_idle(b);
        } else {
            self.pool.retain(b);
        }
    }

    pub(super) fn record(&mut self, hits: usize, misses: usize) {
        self.hits += hits as u64;
        self.misses += misses as u64;
    }

    /// Makes the held, full block `b` findable under `key` (the chain key of its content
    /// `tokens`). Returns false, and `b` stays private, when the cache is off, `b` is already
    /// cached, or another block already holds this content (two sequences prefilled the same prefix
    /// in the same steps: the first one registered wins).
    pub fn register(&mut self, key: BlockKey, tokens: &[u32], b: BlockId) -> bool {
        if !self.enabled || self.entries[b as usize].is_some() || self.map.contains_key(&key) {
            return false;
        }
        assert!(self.pool.refcount(b) > 0, "register of block {b} that nobody holds");
        assert_eq!(tokens.len(), self.block_size(), "register of a partial block {b}");
        self.map.insert(key, b);
        self.entries[b as usize] = Some(Entry {
            key,
            tokens: tokens.to_vec(),
            idle_since: 0,
        });
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(n: usize, bs: usize) -> PrefixCache {
        PrefixCache::new(BlockPool::new(n, bs), true)
    }

    /// Allocates and registers the full blocks of `tokens` as one sequence would; returns its blocks.
    fn fill(c: &mut PrefixCache, tokens: &[u32]) -> Vec<BlockId> {
        let mut parent = BlockKey::ROOT;
        let mut out = vec![];
        for chunk in tokens.chunks_exact(c.block_size()) {
            let b = c.allocate().unwrap();
            let key = BlockKey::chain(&parent, chunk);
            c.register(key, chunk, b);
            parent = key;
            out.push(b);
        }
        out
    }

    #[test]
    fn keys_chain_the_whole_prefix() {
        let a = BlockKey::chain(&BlockKey::ROOT, &[1, 2]);
        assert_eq!(a, BlockKey::chain(&BlockKey::ROOT, &[1, 2]));
        assert_ne!(a, BlockKey::chain(&BlockKey::ROOT, &[2, 1]));
        let b = BlockKey::chain(&a, &[3, 4]);
        assert_ne!(b, BlockKey::chain(&BlockKey::chain(&BlockKey::ROOT, &[9, 9]), &[3, 4]));
    }

    #[test]
    fn hit_after_release_then_lru_eviction() {
        let mut c = cache(4, 2);
        let blocks = fill(&mut c, &[1, 2, 3, 4]);
        for &b in blocks.iter().rev() {
            c.release(b);
        }
        assert_eq!((c.num_idle(), c.pool().num_free()), (2, 2));
        // the same prefix finds both blocks, in order, and revives them
        let hit = c.lookup(&[1, 2, 3, 4, 5], 8);
        assert_eq!(hit.iter().map(|h| h.0).collect::<Vec<_>>(), blocks);
        assert_eq!(c.num_idle(), 0);
        assert_eq!(c.pool().refcount(blocks[0]), 1);
        // a different first block misses at once, even with the same second block
        assert!(c.lookup(&[9, 9, 3, 4], 8).is_empty());
        // max_blocks caps the match
        assert_eq!(c.lookup(&[1, 2, 3, 4], 1).len(), 1);
        c.release(blocks[0]);
        for &b in blocks.iter().rev() {
            c.release(b);
        }
        // released tail first: the tail block is the least recently used and goes first
        let x = c.allocate().unwrap();
        let y = c.allocate().unwrap();
        assert!(
            !blocks.contains(&x) && !blocks.contains(&y),
            "free blocks go before idle ones"
        );
        assert_eq!(c.allocate(), Some(blocks[1]));
        assert_eq!(c.evictions, 1);
        assert_eq!(c.lookup(&[1, 2, 3, 4], 8).len(), 1, "the parent is still cached");
        assert_eq!(c.allocate(), None, "every block held");
    }

    #[test]
    fn duplicate_content_and_collisions_stay_private() {
        let mut c = cache(4, 2);
        let a = fill(&mut c, &[1, 2]);
        let b = fill(&mut c, &[1, 2]);
        assert!(c.is_cached(a[0]) && !c.is_cached(b[0]), "first registered wins");
        c.release(b[0]);
        assert_eq!(c.pool().num_free(), 3, "a private block goes back to the free list");
        // a forged collision: content [5, 6] registered under the key of [7, 8] is never a hit for [7, 8]
        let f = c.allocate().unwrap();
        assert!(c.register(BlockKey::chain(&BlockKey::ROOT, &[7, 8]), &[5, 6], f));
        assert!(c.lookup(&[7, 8], 1).is_empty());
    }

    #[test]
    fn disabled_is_a_pass_through() {
        let mut c = PrefixCache::new(BlockPool::new(2, 2), false);
        let b = fill(&mut c, &[1, 2]);
        assert!(!c.is_cached(b[0]));
        c.release(b[0]);
        assert_eq!((c.num_idle(), c.pool().num_free()), (0, 2));
        assert!(c.lookup(&[1, 2], 1).is_empty());
    }
}

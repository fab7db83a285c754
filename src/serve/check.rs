//! The scheduler's bookkeeping invariants, checked as a whole. The simulation test calls this after
//! every step; an engine may call it in debug builds. Each failure names the block or request.
use super::scheduler::Scheduler;
use std::collections::HashSet;

impl Scheduler {
    /// Ok, or the first broken invariant: every block is exactly one of free, idle-cached or held;
    /// a block's count equals the number of block tables holding it; a block in two tables (or a
    /// table and the cache) is a cached, full, computed block whose tokens match each holder's
    /// tokens at that place; block tables cover what each sequence computed and no more than its
    /// tokens; state slots are distinct and in range.
    pub fn check_invariants(&self) -> Result<(), String> {
        let cache = &self.cache;
        let pool = cache.pool();
        let bs = self.cfg.block_size;
        let n = pool.num_blocks();
        let mut holders = vec![0u32; n];
        let mut slots = HashSet::new();
        if self.running.len() > self.cfg.max_seqs {
            return Err(format!(
                "{} running, max_seqs {}",
                self.running.len(),
                self.cfg.max_seqs
            ));
        }
        for s in &self.running {
            let id = s.req.id;
            if s.computed >= s.tokens.len() {
                return Err(format!(
                    "request {id}: {} of {} tokens computed",
                    s.computed,
                    s.tokens.len()
                ));
            }
            // with an ahead step in flight, blocks also cover the token it feeds (not yet known)
            let pending = usize::from(self.steps_in_flight() == 2);
            let (lo, hi) = (s.computed.div_ceil(bs), (s.tokens.len() + pending).div_ceil(bs));
            if s.blocks.len() < lo || s.blocks.len() > hi {
                return Err(format!(
                    "request {id}: {} blocks for {} computed of {} tokens",
                    s.blocks.len(),
                    s.computed,
                    s.tokens.len()
                ));
            }
            if s.keyed * bs > s.computed {
                return Err(format!(
                    "request {id}: {} blocks keyed, {} tokens computed",
                    s.keyed, s.computed
                ));
            }
            if s.state_slot >= self.cfg.max_seqs || !slots.insert(s.state_slot) {
                return Err(format!(
                    "request {id}: state slot {} taken or out of range",
                    s.state_slot
                ));
            }
            for (j, &b) in s.blocks.iter().enumerate() {
                holders[b as usize] += 1;
                if let Some(t) = cache.cached_tokens(b) {
                    if (j + 1) * bs > s.computed || t != &s.tokens[j * bs..(j + 1) * bs] {
                        return Err(format!(
                            "request {id}: cached block {b} at {j} does not hold its tokens"
                        ));
                    }
                }
            }
        }
        for s in &self.waiting {
            if !s.blocks.is_empty() || s.computed != 0 {
                return Err(format!("waiting request {} holds blocks", s.req.id));
            }
        }
        for (b, &h) in holders.iter().enumerate() {
            let b = b as u32;
            if pool.refcount(b) != h {
                return Err(format!(
                    "block {b}: count {} but {h} block tables hold it",
                    pool.refcount(b)
                ));
            }
            if h > 1 && !cache.is_cached(b) {
                return Err(format!(
                    "block {b}: in {h} block tables but not shared through the prefix cache"
                ));
            }
        }
        let mut free = HashSet::new();
        for &b in pool.free_list() {
            if !free.insert(b) || pool.refcount(b) != 0 || cache.is_cached(b) {
                return Err(format!("block {b}: on the free list twice, held or cached"));
            }
        }
        let mut idle = 0;
        for b in cache.idle_blocks() {
            idle += 1;
            if pool.refcount(b) != 0 || !cache.is_cached(b) || free.contains(&b) {
                return Err(format!("block {b}: idle but held, uncached or free"));
            }
        }
        let used = holders.iter().filter(|&&h| h > 0).count();
        if used + free.len() + idle != n {
            return Err(format!(
                "{used} used + {} free + {idle} idle != {n} blocks: a block leaked",
                free.len()
            ));
        }
        if self.running.len() + self.waiting.len() != self.live_len() {
            return Err("the set of live request ids disagrees with the queues".into());
        }
        Ok(())
    }
}

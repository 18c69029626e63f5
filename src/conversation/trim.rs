//! Handing the heap of retired conversations back to the operating system.
//!
//! glibc's allocator keeps what freed allocations leave in its arenas: after 10,000
//! conversations retired, the gateway's RSS stayed at its 300 MB peak (BENCHMARKS.md, issue
//! #19). `malloc_trim(0)` returns the whole free pages of every arena. It runs on a blocking
//! thread after every [`TRIM_EVERY`] retirements during a burst, when the last live
//! conversation retires, and from the sweep loop for a burst's tail. Other allocators (musl's, jemalloc) return memory on their own; there
//! the trim does nothing.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Retirements between two trims while many conversations retire.
const TRIM_EVERY: u64 = 256;

/// Counts retirements and trims the heap after enough of them.
#[derive(Debug, Default)]
pub(super) struct Trimmer {
    /// Retirements since the last trim.
    pending: AtomicU64,
    /// Trims started (for tests and the curious).
    trims: AtomicU64,
    /// Database connections open at the last [`Trimmer::settle`].
    connections: AtomicU32,
}

impl Trimmer {
    /// A conversation retired: trim once [`TRIM_EVERY`] have since the last trim, or when
    /// it was the last one live (`none_live`): the gateway is idle from then on, and the
    /// sweep's trim of the tail would come only up to 30 s later.
    pub(super) fn retired(&self, none_live: bool) {
        let pending = self.pending.fetch_add(1, Ordering::Relaxed) + 1;
        let due = if none_live { 1 } else { TRIM_EVERY };
        // `swap` decides which of two racing callers trims.
        if pending >= due && self.pending.swap(0, Ordering::Relaxed) >= due {
            self.start();
        }
    }

    /// Trim if anything retired since the last trim (the tail of a burst), or if fewer
    /// database connections are open than at the last call (the pool closed idle ones after
    /// the burst, freeing their page caches).
    pub(super) fn settle(&self, connections: u32) {
        let closed = self.connections.swap(connections, Ordering::Relaxed) > connections;
        if self.pending.swap(0, Ordering::Relaxed) > 0 || closed {
            self.start();
        }
    }

    fn start(&self) {
        self.trims.fetch_add(1, Ordering::Relaxed);
        // Walking the arenas takes milliseconds on a large heap: not on a runtime thread.
        drop(tokio::task::spawn_blocking(release_free_heap));
    }

    #[cfg(test)]
    fn trims(&self) -> u64 {
        self.trims.load(Ordering::Relaxed)
    }
}

/// Give the free pages of the allocator's arenas back to the operating system.
fn release_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists, under its arena locks;
    // it touches no memory the program holds.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_burst_trims_every_256_retirements_and_the_sweep_trims_its_tail() {
        let trimmer = Trimmer::default();
        trimmer.settle(1);
        assert_eq!(trimmer.trims(), 0, "nothing retired, nothing to trim");
        for _ in 0..(2 * TRIM_EVERY + 10) {
            trimmer.retired(false);
        }
        assert_eq!(trimmer.trims(), 2);
        trimmer.settle(1);
        assert_eq!(trimmer.trims(), 3, "the tail of ten");
        trimmer.settle(1);
        assert_eq!(trimmer.trims(), 3);
    }

    #[tokio::test]
    async fn the_last_live_conversation_retiring_trims_at_once() {
        let trimmer = Trimmer::default();
        trimmer.retired(false);
        trimmer.retired(false);
        assert_eq!(trimmer.trims(), 0);
        trimmer.retired(true);
        assert_eq!(trimmer.trims(), 1, "the last of three");
        trimmer.settle(1);
        assert_eq!(trimmer.trims(), 1, "nothing left for the sweep");
        trimmer.retired(true);
        assert_eq!(trimmer.trims(), 2, "a lone conversation");
    }

    #[tokio::test]
    async fn the_sweep_trims_after_the_pool_closed_connections() {
        let trimmer = Trimmer::default();
        trimmer.settle(1);
        trimmer.settle(8);
        assert_eq!(trimmer.trims(), 0, "connections opened: nothing freed");
        trimmer.settle(2);
        assert_eq!(trimmer.trims(), 1, "six closed");
        trimmer.settle(2);
        trimmer.settle(3);
        assert_eq!(trimmer.trims(), 1);
    }

    /// Resident pages of this process, from /proc/self/statm.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn resident_bytes() -> u64 {
        let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
        let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
        pages * 4096
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn freed_small_allocations_stay_resident_until_the_trim_returns_them() {
        const MB: u64 = 1024 * 1024;
        // Many small blocks (as conversations leave them), then one kept block above them
        // so the allocator cannot give the space back by shrinking its top.
        let blocks: Vec<Vec<u8>> = (0..200_000).map(|i| vec![i as u8; 1000]).collect();
        let kept = vec![1u8; 1000];
        drop(blocks);
        let before = resident_bytes();
        release_free_heap();
        let after = resident_bytes();
        assert_eq!(kept[0], 1);
        assert!(
            before.saturating_sub(after) > 100 * MB,
            "RSS {} MB before the trim, {} MB after",
            before / MB,
            after / MB
        );
    }
}

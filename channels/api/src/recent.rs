//! A small map that forgets its oldest entries past a cap: a channel's in-memory state about
//! recent events (pending button presses, thread parents) stays bounded however long the
//! gateway runs. Shared by every channel crate that needs one.

use std::collections::{HashMap, VecDeque};

/// Insertion-ordered map of at most `cap` entries.
#[derive(Debug)]
pub struct Recent<V> {
    cap: usize,
    map: HashMap<String, V>,
    order: VecDeque<String>,
}

impl<V: Clone> Recent<V> {
    /// An empty map keeping at most `cap` entries.
    pub fn new(cap: usize) -> Self {
        Self {
            cap: cap.max(1),
            map: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    /// Insert or replace `key`; the oldest entries go once there are more than `cap`.
    pub fn insert(&mut self, key: String, value: V) {
        if self.map.insert(key.clone(), value).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > self.cap {
            if let Some(oldest) = self.order.pop_front() {
                self.map.remove(&oldest);
            }
        }
    }

    /// A copy of the value under `key`.
    pub fn get(&self, key: &str) -> Option<V> {
        self.map.get(key).cloned()
    }

    /// How many entries are kept.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_entries_are_forgotten_past_the_cap() {
        let mut recent = Recent::new(2);
        recent.insert("a".into(), 1);
        recent.insert("b".into(), 2);
        recent.insert("a".into(), 3);
        recent.insert("c".into(), 4);
        assert_eq!(recent.get("a"), None);
        assert_eq!((recent.get("b"), recent.get("c")), (Some(2), Some(4)));
        assert_eq!(recent.len(), 2);
    }
}

//! A list of at most `N` small `Copy` items kept inline, for the parts of a state that have a
//! fixed bound (a hand, a deck): changing one never allocates, and copying one is a `memcpy`.
//!
//! It reads and writes exactly as a `Vec` does, in serde (a sequence) and in `Debug` (a list),
//! and compares as a slice, so a state that switches a `Vec` field to it keeps its JSON.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

use serde::de::{Deserialize, Deserializer, SeqAccess, Visitor};
use serde::ser::{Serialize, Serializer};

/// A value to fill the unused slots of a [`FixedVec`] with; never observed.
pub(crate) trait Blank: Copy {
    const BLANK: Self;
}

impl Blank for u8 {
    const BLANK: Self = 0;
}

impl<T: Copy> Blank for Option<T> {
    const BLANK: Self = None;
}

/// Up to `N` items, in order. `N` must be below 256.
#[derive(Clone, Copy)]
pub(crate) struct FixedVec<T: Blank, const N: usize> {
    len: u8,
    items: [T; N],
}

impl<T: Blank, const N: usize> FixedVec<T, N> {
    pub(crate) const fn new() -> Self {
        FixedVec {
            len: 0,
            items: [T::BLANK; N],
        }
    }

    /// Appends `item`. Panics when full: every bound is one the rules keep.
    #[inline]
    pub(crate) fn push(&mut self, item: T) {
        assert!((self.len as usize) < N, "a list of at most {N} is full");
        self.items[self.len as usize] = item;
        self.len += 1;
    }

    #[inline]
    pub(crate) fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        Some(self.items[self.len as usize])
    }

    #[inline]
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }

    /// Removes and returns the item at `index`, shifting the later ones down.
    pub(crate) fn remove(&mut self, index: usize) -> T {
        let len = self.len as usize;
        assert!(index < len, "remove at {index} from a list of {len}");
        let item = self.items[index];
        self.items.copy_within(index + 1..len, index);
        self.len -= 1;
        item
    }

    /// Inserts `item` at `index`, shifting the later ones up. Panics when full.
    pub(crate) fn insert(&mut self, index: usize, item: T) {
        let len = self.len as usize;
        assert!(index <= len, "insert at {index} into a list of {len}");
        assert!(len < N, "a list of at most {N} is full");
        self.items.copy_within(index..len, index + 1);
        self.items[index] = item;
        self.len += 1;
    }

    pub(crate) fn extend_from_slice(&mut self, items: &[T]) {
        let len = self.len as usize;
        assert!(len + items.len() <= N, "a list of at most {N} overflows");
        self.items[len..len + items.len()].copy_from_slice(items);
        self.len += items.len() as u8;
    }
}

impl<T: Blank, const N: usize> Default for FixedVec<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Blank, const N: usize> Deref for FixedVec<T, N> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        &self.items[..self.len as usize]
    }
}

impl<T: Blank, const N: usize> DerefMut for FixedVec<T, N> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.items[..self.len as usize]
    }
}

impl<T: Blank + PartialEq, const N: usize> PartialEq for FixedVec<T, N> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: Blank + Eq, const N: usize> Eq for FixedVec<T, N> {}

impl<T: Blank + fmt::Debug, const N: usize> fmt::Debug for FixedVec<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: Blank + Serialize, const N: usize> Serialize for FixedVec<T, N> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de, T: Blank + Deserialize<'de>, const N: usize> Deserialize<'de> for FixedVec<T, N> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Items<T, const N: usize>(PhantomData<T>);

        impl<'de, T: Blank + Deserialize<'de>, const N: usize> Visitor<'de> for Items<T, N> {
            type Value = FixedVec<T, N>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a sequence of at most {N} items")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut list = FixedVec::new();
                while let Some(item) = seq.next_element()? {
                    if list.len() == N {
                        return Err(serde::de::Error::invalid_length(N + 1, &self));
                    }
                    list.push(item);
                }
                Ok(list)
            }
        }

        deserializer.deserialize_seq(Items::<T, N>(PhantomData))
    }
}

impl<T: Blank, const N: usize> FixedVec<T, N> {
    /// Keeps the items for which `keep` holds, in order.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        let mut kept = 0;
        for i in 0..self.len as usize {
            let item = self.items[i];
            if keep(&item) {
                self.items[kept] = item;
                kept += 1;
            }
        }
        self.len = kept as u8;
    }

    /// Moves every item of `other` to the end of this list, leaving `other` empty.
    pub(crate) fn append<const M: usize>(&mut self, other: &mut FixedVec<T, M>) {
        self.extend_from_slice(other);
        other.clear();
    }
}

impl<'a, T: Blank, const N: usize> IntoIterator for &'a FixedVec<T, N> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T: Blank, const N: usize> FromIterator<T> for FixedVec<T, N> {
    /// Panics past `N` items, as [`FixedVec::push`] does.
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        let mut list = FixedVec::new();
        for item in items {
            list.push(item);
        }
        list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type List = FixedVec<u8, 4>;

    #[test]
    fn behaves_as_a_vec() {
        let mut list = List::new();
        let mut vec = Vec::new();
        for i in 1..=3 {
            list.push(i);
            vec.push(i);
        }
        list.insert(0, 9);
        vec.insert(0, 9);
        assert_eq!(&*list, &vec[..]);
        assert_eq!(list.remove(1), vec.remove(1));
        assert_eq!(list.pop(), vec.pop());
        list.extend_from_slice(&[7, 8]);
        vec.extend_from_slice(&[7, 8]);
        assert_eq!(&*list, &vec[..]);
        assert_eq!(format!("{list:?}"), format!("{vec:?}"));
        list.retain(|i| i % 2 == 1);
        vec.retain(|i| i % 2 == 1);
        assert_eq!(&*list, &vec[..]);
        let mut other: FixedVec<u8, 2> = [6, 5].into_iter().collect();
        list.append(&mut other);
        vec.extend([6, 5]);
        assert_eq!(&*list, &vec[..]);
        assert!(other.is_empty());
        list.clear();
        assert!(list.is_empty());
    }

    #[test]
    fn compares_only_the_items_held() {
        let mut a = List::new();
        a.extend_from_slice(&[1, 2, 3]);
        a.pop();
        let mut b = List::new();
        b.extend_from_slice(&[1, 2]);
        assert_eq!(a, b);
    }

    #[test]
    fn reads_and_writes_the_json_of_a_vec_and_refuses_too_many() {
        let mut list = List::new();
        list.extend_from_slice(&[4, 5]);
        let json = serde_json::to_string(&list).unwrap();
        assert_eq!(json, serde_json::to_string(&vec![4u8, 5]).unwrap());
        assert_eq!(serde_json::from_str::<List>(&json).unwrap(), list);
        assert!(serde_json::from_str::<List>("[1,2,3,4,5]").is_err());
        assert_eq!(serde_json::from_str::<List>("[1,2,3,4]").unwrap().len(), 4);
    }
}

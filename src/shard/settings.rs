//! [`Sharding`]: how a queue controller is sharded.

use super::key::DEFAULT_SHARDS;

/// How a sharded queue controller spreads its keys: the number of virtual
/// shards, and this process's member name. Given to
/// [`Registering::sharded`](crate::controller::Registering::sharded).
///
/// ```
/// use cosi_runtime::shard::{DEFAULT_SHARDS, Sharding};
///
/// let sharding = Sharding::new().member("node-a");
/// assert_eq!(sharding.shard_count(), DEFAULT_SHARDS);
/// assert_eq!(sharding.member_name(), Some("node-a"));
/// assert_eq!(Sharding::new().shards(16).shard_count(), 16);
/// assert!(!sharding.keeps_every_key(), "a process holds only its share");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sharding {
    shards: u32,
    member: Option<String>,
    keep_every_key: bool,
}

impl Default for Sharding {
    fn default() -> Self {
        Sharding { shards: DEFAULT_SHARDS, member: None, keep_every_key: false }
    }
}

impl Sharding {
    /// [`DEFAULT_SHARDS`] virtual shards; a member name made of the process
    /// id and the time it joins.
    pub fn new() -> Self {
        Sharding::default()
    }

    /// `shards` virtual shards (at least 1). Every process of the controller
    /// must use the same number: it decides every key's shard.
    #[must_use]
    pub fn shards(mut self, shards: u32) -> Self {
        self.shards = shards.max(1);
        self
    }

    /// This process's member name (unique among the controller's processes;
    /// it also decides which shards this process wins).
    #[must_use]
    pub fn member(mut self, name: impl Into<String>) -> Self {
        self.member = Some(name.into());
        self
    }

    /// Whether this process's state keeps every key of the controller's
    /// primary kinds (`true`), or only the keys of the shards it owns
    /// (`false`, the default).
    ///
    /// By default a process holds only its share: its state neither
    /// receives nor caches the other members' keys of those kinds, so its
    /// memory falls as members join. Reads of those kinds in this process
    /// then see only its own shards, and a write to an existing key of
    /// another member's shard is refused
    /// ([`Error::InvalidInput`](crate::Error::InvalidInput), naming the
    /// shard); a new key goes to the store. Keep every key when something
    /// else in the process reads the kinds whole.
    #[must_use]
    pub fn keep_every_key(mut self, keep: bool) -> Self {
        self.keep_every_key = keep;
        self
    }

    /// See [`keep_every_key`](Self::keep_every_key).
    pub fn keeps_every_key(&self) -> bool {
        self.keep_every_key
    }

    /// The number of virtual shards.
    pub fn shard_count(&self) -> u32 {
        self.shards
    }

    /// The member name, if one was given.
    pub fn member_name(&self) -> Option<&str> {
        self.member.as_deref()
    }

    /// The member name, given or made (process id and time).
    pub(crate) fn member_or_made(&self) -> String {
        self.member.clone().unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            format!("pid{}-{nanos:x}", std::process::id())
        })
    }
}

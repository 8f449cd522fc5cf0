//! Process groups a server keeps running beside its tasks (a proxy's stdio upstream),
//! recorded in the store under a key of the caller's ([`WorkStore::set_kept_group`]), so that
//! the next server on the store ends the group a killed one left running
//! ([`Engine::end_kept_group`]) before it starts its own.
//!
//! A record names the group (its leader's pid and start time, as for a task's command,
//! [`ProcessGroup`]) and the process that keeps it (pid and start time). Start times count
//! from the boot, so the store key is scoped to this boot's id: a record written on another
//! machine (a replica on a shared store) or before a reboot is never looked at. Linux only;
//! elsewhere nothing is recorded and nothing is ended.
//!
//! [`WorkStore::set_kept_group`]: crate::WorkStore::set_kept_group

use std::time::Duration;

use crate::engine::Engine;
use crate::error::EngineError;
use crate::process::{KeptGroup, Leftover, ProcessGroup, boot_id};

impl Engine {
    /// Records that this process keeps the process group led by `leader` (a process it just
    /// started in a group of its own) under `key`, replacing what was recorded there. Returns
    /// whether a record was written (not off Linux, nor for a leader already gone).
    ///
    /// # Errors
    /// A store failure.
    pub async fn keep_group(&self, key: &str, leader: u32) -> Result<bool, EngineError> {
        let Some(scoped) = scoped(key) else { return Ok(false) };
        let Some(kept) = ProcessGroup::led_by(leader).and_then(KeptGroup::by_this_process) else {
            return Ok(false);
        };
        self.inner.store.set_kept_group(&scoped, Some(&kept)).await?;
        Ok(true)
    }

    /// Removes the record under `key` (the group was closed).
    ///
    /// # Errors
    /// A store failure.
    pub async fn forget_kept_group(&self, key: &str) -> Result<(), EngineError> {
        let Some(scoped) = scoped(key) else { return Ok(()) };
        Ok(self.inner.store.set_kept_group(&scoped, None).await?)
    }

    /// Ends the process group recorded under `key` by a process that is gone: SIGTERM, then
    /// SIGKILL if some of it is still there after `grace` ([`ProcessGroup::terminate_leftover`],
    /// which leaves a pid that is some other process's now alone). `None`: nothing is
    /// recorded, or its keeper still runs (the group is left alone). The record is removed
    /// unless the group survived.
    ///
    /// # Errors
    /// A store failure.
    pub async fn end_kept_group(&self, key: &str, grace: Duration) -> Result<Option<Leftover>, EngineError> {
        let Some(scoped) = scoped(key) else { return Ok(None) };
        let Some(kept) = self.inner.store.kept_group(&scoped).await? else { return Ok(None) };
        if kept.keeper_runs() {
            tracing::info!(key, pgid = kept.group.pgid, keeper = kept.keeper_pid, "a process group recorded under this key is kept by a process that still runs; left alone");
            return Ok(None);
        }
        let leftover = kept.group.terminate_leftover(grace).await;
        match leftover {
            Leftover::Gone | Leftover::Reused => {}
            Leftover::Terminated | Leftover::Killed => {
                tracing::warn!(key, pgid = kept.group.pgid, ?leftover, "ended the process group a previous server left running");
            }
            Leftover::Survived => {
                tracing::error!(key, pgid = kept.group.pgid, "a process group a previous server left running survived SIGKILL");
                return Ok(Some(leftover));
            }
        }
        self.inner.store.set_kept_group(&scoped, None).await?;
        Ok(Some(leftover))
    }
}

/// `key` scoped to this boot, or `None` off Linux.
fn scoped(key: &str) -> Option<String> {
    Some(format!("{}:{key}", boot_id()?))
}

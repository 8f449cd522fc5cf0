//! The era-neutral operations over the engine that both eras' codecs run: call a tool
//! plainly or as a task ([`call`]), and read, wait for, list, cancel and answer tasks
//! ([`tasks`]); and keep long plain calls alive for clients without tasks: heartbeats,
//! the handoff to a task, the helper tools that collect it ([`handoff`]); serve a task's
//! event log on a request's stream ([`stream`]). An operation takes a [`RequestContext`](crate::context::RequestContext) and
//! plain values, and returns engine records or engine errors; decoding params, choosing
//! whether a call becomes a task, and rendering results and errors are the codecs' job.

pub(crate) mod call;
pub(crate) mod handoff;
pub(crate) mod stream;
pub(crate) mod tasks;

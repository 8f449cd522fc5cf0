//! The configuration through its public API, in one test binary: `auth` reads
//! `[[server.auth.tokens]]` with `token_env` from the environment.

mod auth;
mod tracing;
mod upstream;

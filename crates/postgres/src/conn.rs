//! Statements as this store sends them: on a direct connection, prepared once per connection
//! and cached; behind a transaction pooler (PgBouncer's `pool_mode = transaction`, the URL's
//! `pooler=transaction`), where a prepared statement does not outlive its transaction and
//! the next one may run on another server connection, unnamed, with their parameters' types,
//! in one round trip each (tokio-postgres' `query_typed`, made for such poolers).
//!
//! The types of a statement's parameters are learned once per process by preparing it inside
//! a transaction (so on one server connection) and closing it there. No session state is
//! relied on: `LISTEN` goes to a direct connection of its own (`listen_url`), and every lock
//! the store takes is transaction-level.
//!
//! [`Conn`] (a pooled connection) and [`Tx`] (a transaction on one) offer the calls the store
//! makes ([`Session`]), the same on either path.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use futures_util::{StreamExt, pin_mut};
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Error, Row};

/// How this store sends statements, shared by its connections: prepared and cached, or
/// unnamed with the parameter types learned so far.
#[derive(Clone, Default)]
pub(crate) struct Statements {
    /// Behind a transaction pooler: unnamed statements only.
    pooled: bool,
    /// The parameter types of each statement sent unnamed, by its text.
    types: Arc<Mutex<HashMap<String, Arc<[Type]>>>>,
}

impl Statements {
    /// Statements for a direct connection (`false`) or a transaction pooler (`true`).
    pub(crate) fn new(pooled: bool) -> Statements {
        Statements { pooled, types: Arc::default() }
    }

    fn known(&self, sql: &str) -> Option<Arc<[Type]>> {
        self.types.lock().unwrap_or_else(PoisonError::into_inner).get(sql).cloned()
    }

    fn learned(&self, sql: &str, types: Arc<[Type]>) {
        self.types.lock().unwrap_or_else(PoisonError::into_inner).insert(sql.to_owned(), types);
    }
}

/// A statement ready to run: prepared (and cached by the connection), or its text with its
/// parameters' types, sent unnamed.
pub(crate) enum Stmt {
    Named(tokio_postgres::Statement),
    Unnamed(Arc<str>, Arc<[Type]>),
}

/// A connection from the store's pool.
pub(crate) struct Conn {
    client: deadpool_postgres::Client,
    statements: Statements,
}

/// A transaction on a [`Conn`]; rolled back if dropped uncommitted.
pub(crate) struct Tx<'a> {
    tx: deadpool_postgres::Transaction<'a>,
    statements: Statements,
}

impl Conn {
    pub(crate) fn new(client: deadpool_postgres::Client, statements: Statements) -> Conn {
        Conn { client, statements }
    }

    /// Starts a transaction.
    pub(crate) async fn transaction(&mut self) -> Result<Tx<'_>, Error> {
        let statements = self.statements.clone();
        Ok(Tx { tx: self.client.transaction().await?, statements })
    }
}

impl Tx<'_> {
    pub(crate) async fn commit(self) -> Result<(), Error> {
        self.tx.commit().await
    }
}

/// The calls the store makes on a connection or a transaction, the same on a direct
/// connection and behind a pooler.
#[async_trait]
pub(crate) trait Session: Send + Sync {
    /// `sql` ready to run: prepared and cached, or (behind a pooler) its parameter types,
    /// learned at its first use.
    async fn prepare_cached(&self, sql: &str) -> Result<Stmt, Error>;
    async fn query(&self, stmt: &Stmt, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, Error>;
    async fn query_one(&self, stmt: &Stmt, params: &[&(dyn ToSql + Sync)]) -> Result<Row, Error>;
    async fn query_opt(&self, stmt: &Stmt, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>, Error>;
    /// How many rows the statement changed.
    async fn execute(&self, stmt: &Stmt, params: &[&(dyn ToSql + Sync)]) -> Result<u64, Error>;
}

/// `params` with their types, as `query_typed` takes them.
fn typed<'a>(params: &[&'a (dyn ToSql + Sync)], types: &[Type]) -> Vec<(&'a (dyn ToSql + Sync), Type)> {
    params.iter().zip(types).map(|(param, ty)| (*param, ty.clone())).collect()
}

/// The [`Session`] of a connection type: `$client` reaches its tokio-postgres client or
/// transaction; `$learn` prepares a statement inside a transaction and gives its types.
macro_rules! session {
    ($type:ty, $client:ident, $learn:ident) => {
        #[async_trait]
        impl Session for $type {
            async fn prepare_cached(&self, sql: &str) -> Result<Stmt, Error> {
                if !self.statements.pooled {
                    return self.$client.prepare_cached(sql).await.map(Stmt::Named);
                }
                let types = match self.statements.known(sql) {
                    Some(types) => types,
                    None => {
                        let types = self.$learn(sql).await?;
                        self.statements.learned(sql, Arc::clone(&types));
                        types
                    }
                };
                Ok(Stmt::Unnamed(sql.into(), types))
            }

            async fn query(&self, stmt: &Stmt, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, Error> {
                match stmt {
                    Stmt::Named(statement) => self.$client.query(statement, params).await,
                    Stmt::Unnamed(sql, types) => self.$client.query_typed(sql, &typed(params, types)).await,
                }
            }

            async fn query_one(&self, stmt: &Stmt, params: &[&(dyn ToSql + Sync)]) -> Result<Row, Error> {
                match stmt {
                    Stmt::Named(statement) => self.$client.query_one(statement, params).await,
                    Stmt::Unnamed(sql, types) => self.$client.query_typed_one(sql, &typed(params, types)).await,
                }
            }

            async fn query_opt(&self, stmt: &Stmt, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>, Error> {
                match stmt {
                    Stmt::Named(statement) => self.$client.query_opt(statement, params).await,
                    Stmt::Unnamed(sql, types) => self.$client.query_typed_opt(sql, &typed(params, types)).await,
                }
            }

            async fn execute(&self, stmt: &Stmt, params: &[&(dyn ToSql + Sync)]) -> Result<u64, Error> {
                match stmt {
                    Stmt::Named(statement) => self.$client.execute(statement, params).await,
                    Stmt::Unnamed(sql, types) => {
                        let rows = self.$client.query_typed_raw(sql, typed(params, types)).await?;
                        pin_mut!(rows);
                        while let Some(row) = rows.next().await {
                            row?;
                        }
                        Ok(rows.rows_affected().unwrap_or(0))
                    }
                }
            }
        }
    };
}

session!(Conn, client, learn_in_a_transaction);
session!(Tx<'_>, tx, learn);

impl Conn {
    /// The parameter types of `sql`, prepared and closed inside a transaction of its own (so
    /// on one server connection behind the pooler).
    async fn learn_in_a_transaction(&self, sql: &str) -> Result<Arc<[Type]>, Error> {
        self.client.batch_execute("BEGIN").await?;
        let learned = async {
            let statement = self.client.prepare(sql).await?;
            let types: Arc<[Type]> = statement.params().into();
            // Dropping it closes it, in order, before the COMMIT below.
            drop(statement);
            Ok::<_, Error>(types)
        }
        .await;
        let end = if learned.is_ok() { "COMMIT" } else { "ROLLBACK" };
        self.client.batch_execute(end).await?;
        learned
    }
}

impl Tx<'_> {
    /// The parameter types of `sql`, prepared and closed inside this transaction.
    async fn learn(&self, sql: &str) -> Result<Arc<[Type]>, Error> {
        let statement = self.tx.prepare(sql).await?;
        let types: Arc<[Type]> = statement.params().into();
        drop(statement);
        Ok(types)
    }
}

/// The store's pool with how its statements are sent: what the store, its feed and its
/// notifier take connections from.
#[derive(Clone)]
pub(crate) struct Connections {
    pool: deadpool_postgres::Pool,
    statements: Statements,
}

impl Connections {
    pub(crate) fn new(pool: deadpool_postgres::Pool, statements: Statements) -> Connections {
        Connections { pool, statements }
    }

    /// A connection of the pool.
    pub(crate) async fn get(&self) -> Result<Conn, deadpool_postgres::PoolError> {
        Ok(Conn::new(self.pool.get().await?, self.statements.clone()))
    }
}

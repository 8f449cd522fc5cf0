-- 0010: the `status` CHECK of `tasks` as comparisons joined by OR, not an IN list.
--
-- SQLite evaluates an IN list of more than two constants through an ephemeral B-tree that it
-- opens, fills and closes on every insert and every update of the row: two per task
-- lifecycle, about 7 % of its instructions (benches/profile.sh). The two constraints accept
-- exactly the same values, and the rows on disk do not change, so the table's text in the
-- schema is edited in place: SQLite's documented procedure for changing a CHECK constraint
-- (https://www.sqlite.org/lang_altertable.html, "making other kinds of table schema
-- changes"). `migrate.rs` bumps `schema_version` and reloads the schema after this file
-- (`Migration::edits_schema`), and refuses the migration if the text was not found.

PRAGMA writable_schema = ON;

UPDATE sqlite_schema
SET sql = replace(
    sql,
    'CHECK (status IN (''working'', ''input_required'', ''completed'', ''failed'', ''cancelled''))',
    'CHECK (status = ''working'' OR status = ''input_required'' OR status = ''completed'''
        || ' OR status = ''failed'' OR status = ''cancelled'')'
)
WHERE type = 'table' AND name = 'tasks';

//! The tables and INSERTs of two SQL Server single-row insert tests, in PostgreSQL and
//! SQLite dialects, and the keys the client threads insert.
//!
//! | schema | PostgreSQL | SQLite |
//! |---|---|---|
//! | `seed-001` | `c1 bigint PRIMARY KEY, c2 timestamp DEFAULT localtimestamp, c3 char(111) DEFAULT 'a', c4 int DEFAULT 1, c5 int DEFAULT 2, c6 bigint DEFAULT 42` | `c1 INTEGER PRIMARY KEY` (the rowid: clustered, like the original's `PRIMARY KEY CLUSTERED`), `c2 TEXT DEFAULT CURRENT_TIMESTAMP`, `c3 TEXT DEFAULT` 'a' padded to 111 characters (SQLite does not pad `char(n)`), `c4`…`c6 INTEGER` with the same defaults |
//! | `seed-002`, sequential | `id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, dt timestamp, spid int, guid uuid, str varchar(100)` | `id INTEGER PRIMARY KEY` (rowid = max+1, SQLite's identity), `dt TEXT, spid INTEGER, guid BLOB, str TEXT` |
//! | `seed-002`, random | identity `id` without index, `guid uuid PRIMARY KEY` | `WITHOUT ROWID` table clustered on `guid BLOB PRIMARY KEY`, `id INTEGER` left NULL (SQLite has identities only as the rowid) |
//!
//! Keys (`--key`): `seed-001` sequential inserts `(thread + 1) × 10^10 + i` as the original
//! T-SQL's `@@SPID × 10^10 + @i` (each thread appends to its own hot page); random inserts a 63-bit
//! bijective scramble of that number, so keys are spread over the whole index yet never
//! collide. `seed-002` always lets the engine number `id`; its `guid` is a UUID v4 made in the
//! server on PostgreSQL (`gen_random_uuid()`, like T-SQL's `newid()`, PostgreSQL ≥ 13)
//! and by the client thread on SQLite (16 random bytes with the v4 bits), and `spid` is
//! the backend's pid on PostgreSQL (T-SQL's `@@spid`) and the thread index on SQLite.
//! `--prefill` rows get random keys from the engine's own random function.

use crate::error::BadInput;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The `str` column of the `seed-002` table.
pub const SEED002_STR: &str = "this is a string for me and for you";

/// Which table: `seed-001` or `seed-002`, after the two insert tests they reproduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Schema {
    /// `seed-001`: a 150-byte row keyed by a client-chosen bigint (`MyBigTable` of the blog
    /// post "SQL Server, Hyper-Threading and OLTP Workloads").
    #[serde(rename = "seed-001")]
    Seed001,
    /// `seed-002`: an identity-keyed row with a timestamp, session id, uuid and string
    /// (`ins`, from a SQL Server single-row insert test).
    #[serde(rename = "seed-002")]
    Seed002,
}

impl Schema {
    /// Parses `seed-001` / `seed-002` (also `001`, `seed001`).
    pub fn parse(s: &str) -> Result<Self, BadInput> {
        match s.trim().to_ascii_lowercase().as_str() {
            "seed-001" | "seed001" | "001" | "1" => Ok(Schema::Seed001),
            "seed-002" | "seed002" | "002" | "2" => Ok(Schema::Seed002),
            other => Err(BadInput(format!(
                "unknown schema `{other}`; valid: seed-001, seed-002"
            ))),
        }
    }

    /// The table's name.
    pub fn table(self) -> &'static str {
        match self {
            Schema::Seed001 => "smtlab_seed001",
            Schema::Seed002 => "smtlab_seed002",
        }
    }
}

impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Schema::Seed001 => "seed-001",
            Schema::Seed002 => "seed-002",
        })
    }
}

/// Where new keys land in the primary-key index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyMode {
    /// Ever-increasing keys: the last page of the index is hot.
    Sequential,
    /// Keys spread over the whole index.
    Random,
}

impl KeyMode {
    /// Parses `sequential` / `random`.
    pub fn parse(s: &str) -> Result<Self, BadInput> {
        match s.trim().to_ascii_lowercase().as_str() {
            "sequential" | "seq" => Ok(KeyMode::Sequential),
            "random" | "rand" => Ok(KeyMode::Random),
            other => Err(BadInput(format!(
                "unknown key mode `{other}`; valid: sequential, random"
            ))),
        }
    }
}

impl fmt::Display for KeyMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeyMode::Sequential => "sequential",
            KeyMode::Random => "random",
        })
    }
}

/// Whether a commit waits for its log record to reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Durability {
    /// Wait: SQLite `synchronous=FULL`, PostgreSQL `synchronous_commit=on`.
    Full,
    /// Don't wait (SQL Server's `DELAYED_DURABILITY = FORCED`): SQLite `synchronous=OFF`,
    /// PostgreSQL `synchronous_commit=off`. A crash may lose the last commits, never
    /// corrupt the database.
    Delayed,
}

impl Durability {
    /// Parses `full` / `delayed`.
    pub fn parse(s: &str) -> Result<Self, BadInput> {
        match s.trim().to_ascii_lowercase().as_str() {
            "full" => Ok(Durability::Full),
            "delayed" | "off" | "async" => Ok(Durability::Delayed),
            other => Err(BadInput(format!(
                "unknown durability `{other}`; valid: full, delayed"
            ))),
        }
    }
}

impl fmt::Display for Durability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Durability::Full => "full",
            Durability::Delayed => "delayed",
        })
    }
}

/// Largest `--rows-per-txn`: one multi-row INSERT binds this many rows.
pub const MAX_ROWS_PER_TXN: u32 = crate::limits::MAX_ROWS_PER_TXN as u32;

/// The table and the shape of each transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableSpec {
    /// Which table.
    pub schema: Schema,
    /// Sequential or random keys.
    pub key: KeyMode,
    /// Rows per transaction: one multi-row INSERT, committed on its own (the original's
    /// `BEGIN; INSERT … VALUES (…),(…); COMMIT`).
    pub rows_per_txn: u32,
}

impl TableSpec {
    /// Checks `rows_per_txn` is within 1..=[`MAX_ROWS_PER_TXN`].
    pub fn validate(&self) -> Result<(), BadInput> {
        if self.rows_per_txn == 0 || self.rows_per_txn > MAX_ROWS_PER_TXN {
            return Err(BadInput(format!(
                "--rows-per-txn must be 1..={MAX_ROWS_PER_TXN} (got {})",
                self.rows_per_txn
            )));
        }
        Ok(())
    }

    /// PostgreSQL: DROP + CREATE.
    pub fn pg_create(&self) -> String {
        let t = self.schema.table();
        let body = match (self.schema, self.key) {
            (Schema::Seed001, _) => "c1 bigint NOT NULL PRIMARY KEY, \
                 c2 timestamp DEFAULT localtimestamp, c3 char(111) DEFAULT 'a', \
                 c4 int DEFAULT 1, c5 int DEFAULT 2, c6 bigint DEFAULT 42"
                .to_string(),
            (Schema::Seed002, KeyMode::Sequential) => {
                "id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, dt timestamp, spid int, \
                 guid uuid, str varchar(100)"
                    .to_string()
            }
            (Schema::Seed002, KeyMode::Random) => {
                "id bigint GENERATED ALWAYS AS IDENTITY, dt timestamp, spid int, \
                 guid uuid NOT NULL PRIMARY KEY, str varchar(100)"
                    .to_string()
            }
        };
        format!("DROP TABLE IF EXISTS {t}; CREATE TABLE {t} ({body});")
    }

    /// SQLite: DROP + CREATE.
    pub fn sqlite_create(&self) -> String {
        let t = self.schema.table();
        let body = match (self.schema, self.key) {
            (Schema::Seed001, _) => "c1 INTEGER PRIMARY KEY, \
                 c2 TEXT DEFAULT CURRENT_TIMESTAMP, c3 TEXT DEFAULT (printf('%-111s', 'a')), \
                 c4 INTEGER DEFAULT 1, c5 INTEGER DEFAULT 2, c6 INTEGER DEFAULT 42)"
                .to_string(),
            (Schema::Seed002, KeyMode::Sequential) => {
                "id INTEGER PRIMARY KEY, dt TEXT, spid INTEGER, guid BLOB, str TEXT)".to_string()
            }
            (Schema::Seed002, KeyMode::Random) => "id INTEGER, dt TEXT, spid INTEGER, \
                 guid BLOB NOT NULL PRIMARY KEY, str TEXT) WITHOUT ROWID"
                .to_string(),
        };
        format!("DROP TABLE IF EXISTS {t}; CREATE TABLE {t} ({body};")
    }

    /// PostgreSQL: `rows` random-key rows in one statement.
    pub fn pg_prefill(&self, rows: u64) -> String {
        let t = self.schema.table();
        match self.schema {
            Schema::Seed001 => format!(
                "INSERT INTO {t} (c1) SELECT (random() * 9.2e18)::bigint \
                 FROM generate_series(1, {rows}) ON CONFLICT DO NOTHING;"
            ),
            Schema::Seed002 => format!(
                "INSERT INTO {t} (dt, spid, guid, str) SELECT localtimestamp, 0, \
                 gen_random_uuid(), '{SEED002_STR}' FROM generate_series(1, {rows});"
            ),
        }
    }

    /// SQLite: `rows` random-key rows in one statement.
    pub fn sqlite_prefill(&self, rows: u64) -> String {
        let t = self.schema.table();
        let series =
            format!("WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n LIMIT {rows})");
        match self.schema {
            Schema::Seed001 => format!(
                "{series} INSERT OR IGNORE INTO {t} (c1) \
                 SELECT random() & 9223372036854775807 FROM n;"
            ),
            Schema::Seed002 => format!(
                "{series} INSERT OR IGNORE INTO {t} (dt, spid, guid, str) \
                 SELECT CURRENT_TIMESTAMP, 0, randomblob(16), '{SEED002_STR}' FROM n;"
            ),
        }
    }

    /// PostgreSQL: the prepared INSERT of one transaction (`rows_per_txn` rows).
    /// `seed-001` binds one key per row (`$1`…`$k`); `seed-002` binds the spid once (`$1`).
    pub fn pg_insert(&self) -> String {
        let t = self.schema.table();
        let k = self.rows_per_txn as usize;
        match self.schema {
            Schema::Seed001 => {
                let vals: Vec<String> = (1..=k).map(|i| format!("(${i})")).collect();
                format!("INSERT INTO {t} (c1) VALUES {}", vals.join(", "))
            }
            Schema::Seed002 => {
                let row = format!("(localtimestamp, $1, gen_random_uuid(), '{SEED002_STR}')");
                format!(
                    "INSERT INTO {t} (dt, spid, guid, str) VALUES {}",
                    vec![row; k].join(", ")
                )
            }
        }
    }

    /// SQLite: the prepared INSERT of one transaction. `seed-001` binds keys `?1`…`?k`;
    /// `seed-002` binds the spid as `?1` and the guids as `?2`…`?(k+1)`.
    pub fn sqlite_insert(&self) -> String {
        let t = self.schema.table();
        let k = self.rows_per_txn as usize;
        match self.schema {
            Schema::Seed001 => {
                let vals: Vec<String> = (1..=k).map(|i| format!("(?{i})")).collect();
                format!("INSERT INTO {t} (c1) VALUES {}", vals.join(", "))
            }
            Schema::Seed002 => {
                let vals: Vec<String> = (1..=k)
                    .map(|i| format!("(CURRENT_TIMESTAMP, ?1, ?{}, '{SEED002_STR}')", i + 1))
                    .collect();
                format!(
                    "INSERT INTO {t} (dt, spid, guid, str) VALUES {}",
                    vals.join(", ")
                )
            }
        }
    }

    /// `SELECT count(*)` of the table (both dialects).
    pub fn count_sql(&self) -> String {
        format!("SELECT count(*) FROM {}", self.schema.table())
    }
}

/// Base of thread `t`'s sequential keys: `(t + 1) × 10^10`, as T-SQL's `@@SPID × 10^10`.
pub fn key_base(thread: usize) -> i64 {
    (thread as i64 + 1) * 10_000_000_000
}

/// The key of row `i` of thread `thread`.
#[inline]
pub fn key(mode: KeyMode, thread: usize, i: u64) -> i64 {
    let seq = key_base(thread) + i as i64;
    match mode {
        KeyMode::Sequential => seq,
        KeyMode::Random => scramble63(seq as u64) as i64,
    }
}

const MASK63: u64 = (1 << 63) - 1;

/// A bijection of `[0, 2^63)`: xor-shifts and odd multipliers mod 2^63 are each
/// invertible there (the splitmix64 finaliser, narrowed to 63 bits), so distinct inputs
/// give distinct, well-spread keys.
#[inline]
pub fn scramble63(x: u64) -> u64 {
    let mut z = x & MASK63;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9) & MASK63;
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb) & MASK63;
    z ^ (z >> 31)
}

/// splitmix64: a small, fast per-thread PRNG (not for cryptography).
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A random UUID version 4 (RFC 9562 §5.4), as 16 bytes.
    #[inline]
    pub fn uuid_v4(&mut self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.next_u64().to_le_bytes());
        b[8..].copy_from_slice(&self.next_u64().to_le_bytes());
        b[6] = (b[6] & 0x0f) | 0x40; // version 4
        b[8] = (b[8] & 0x3f) | 0x80; // variant 10
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_names() {
        assert_eq!(Schema::parse("seed-001").unwrap(), Schema::Seed001);
        assert_eq!(Schema::parse("SEED-002").unwrap(), Schema::Seed002);
        let e = Schema::parse("tpcc").unwrap_err().0;
        assert!(e.contains("seed-001, seed-002"), "{e}");
        assert_eq!(KeyMode::parse("random").unwrap(), KeyMode::Random);
        assert_eq!(Durability::parse("delayed").unwrap(), Durability::Delayed);
        assert!(Durability::parse("maybe").is_err());
    }

    #[test]
    fn sequential_keys_are_the_thread_times_ten_to_the_ten_plus_i() {
        assert_eq!(key(KeyMode::Sequential, 0, 0), 10_000_000_000);
        assert_eq!(key(KeyMode::Sequential, 2, 5), 30_000_000_005);
        let r = key(KeyMode::Random, 0, 0);
        assert!(r >= 0 && r != 10_000_000_000);
    }

    #[test]
    fn insert_sql_binds_one_parameter_per_row() {
        let t = TableSpec {
            schema: Schema::Seed001,
            key: KeyMode::Sequential,
            rows_per_txn: 2,
        };
        assert_eq!(
            t.pg_insert(),
            "INSERT INTO smtlab_seed001 (c1) VALUES ($1), ($2)"
        );
        assert_eq!(
            t.sqlite_insert(),
            "INSERT INTO smtlab_seed001 (c1) VALUES (?1), (?2)"
        );
        let t2 = TableSpec {
            schema: Schema::Seed002,
            ..t
        };
        assert!(t2.sqlite_insert().contains("?3"));
        assert_eq!(t2.pg_insert().matches("gen_random_uuid()").count(), 2);
        assert!(
            TableSpec {
                rows_per_txn: 0,
                ..t
            }
            .validate()
            .is_err()
        );
    }

    #[test]
    fn uuid_has_version_and_variant_bits() {
        let mut r = SplitMix64(1);
        for _ in 0..100 {
            let u = r.uuid_v4();
            assert_eq!(u[6] >> 4, 4);
            assert_eq!(u[8] >> 6, 0b10);
        }
    }

    proptest! {
        #[test]
        fn scramble_is_injective_and_63_bit(a in 0u64..(1 << 63), b in 0u64..(1 << 63)) {
            let (sa, sb) = (scramble63(a), scramble63(b));
            prop_assert!(sa < (1 << 63));
            prop_assert_eq!(a == b, sa == sb);
        }
    }
}

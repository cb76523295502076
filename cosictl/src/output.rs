//! Output: talosctl-style tables, JSON, YAML.

use std::io::{self, Write};

use clap::ValueEnum;
use serde_json::Value;

use crate::failure::Failure;

/// How resources are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned columns (talosctl's layout).
    Table,
    /// JSON.
    Json,
    /// YAML.
    Yaml,
}

/// Columns padded by three spaces, as talosctl's tabwriter does. Rows added
/// before [`write_all`](Table::write_all) set the widths; rows written after
/// it (watch mode) keep them, so each row can be printed as it arrives.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    widths: Vec<usize>,
}

const PADDING: usize = 3;

impl Table {
    pub fn new(header: &[&str]) -> Table {
        let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
        let widths = header.iter().map(|h| h.chars().count()).collect();
        Table { header, rows: Vec::new(), widths }
    }

    pub fn row(&mut self, row: Vec<String>) {
        for (w, cell) in self.widths.iter_mut().zip(&row) {
            *w = (*w).max(cell.chars().count());
        }
        self.rows.push(row);
    }

    fn line(&self, row: &[String]) -> String {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if i + 1 < row.len() {
                let width = self.widths.get(i).copied().unwrap_or(0);
                let pad = width.saturating_sub(cell.chars().count()) + PADDING;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        line.trim_end().to_owned()
    }

    /// The header and the rows so far.
    pub fn write_all(&mut self, out: &mut impl Write) -> io::Result<()> {
        writeln!(out, "{}", self.line(&self.header))?;
        for row in std::mem::take(&mut self.rows) {
            writeln!(out, "{}", self.line(&row))?;
        }
        out.flush()
    }

    /// One more row, in the widths set so far.
    pub fn write_row(&self, out: &mut impl Write, row: &[String]) -> io::Result<()> {
        writeln!(out, "{}", self.line(row))?;
        out.flush()
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// NAMESPACE TYPE ID VERSION of a resource.
pub fn resource_row(r: &Value) -> Vec<String> {
    let md = &r["metadata"];
    ["namespace", "type", "id", "version"].iter().map(|k| text(&md[*k])).collect()
}

/// One line of `cosictl controllers`.
pub fn controller_row(c: &Value) -> Vec<String> {
    let counter = |k: &str| text(&c["counters"][k]);
    let queued = match &c["queue"] {
        Value::Null => "-".to_owned(),
        q => format!("{}/{}", text(&q["waiting"]), text(&q["running"])),
    };
    vec![
        text(&c["name"]),
        text(&c["status"]),
        counter("reconciles"),
        counter("errors"),
        counter("panics"),
        counter("restarts"),
        counter("retries"),
        queued,
        text(&c["last_error"]),
    ]
}

/// `cosictl shards`: one line per sharded controller (the ring as this
/// process sees it); with `detail`, then one line per shard it owns.
pub fn shard_tables(controllers: &[Value], detail: bool, out: &mut impl Write) -> io::Result<()> {
    let mut ring = Table::new(&[
        "CONTROLLER",
        "MEMBER",
        "OWNED",
        "DRAINING",
        "KEYS",
        "ACQUIRED",
        "RELEASED",
        "LOST",
        "MEMBERS",
    ]);
    for c in controllers {
        let count = |k: &str| c[k].as_array().map_or(0, Vec::len);
        let members: Vec<String> =
            c["members"].as_array().into_iter().flatten().map(text).collect();
        ring.row(vec![
            text(&c["controller"]),
            text(&c["member"]),
            format!("{}/{}", count("owned"), text(&c["shards"])),
            count("draining").to_string(),
            text(&c["keys"]),
            text(&c["handoffs"]["acquired"]),
            text(&c["handoffs"]["released"]),
            text(&c["handoffs"]["lost"]),
            members.join(","),
        ]);
    }
    ring.write_all(out)?;
    if !detail {
        return Ok(());
    }
    writeln!(out)?;
    let mut shards = Table::new(&["CONTROLLER", "SHARD", "TOKEN", "KEYS", "DRAINING"]);
    for c in controllers {
        for s in c["owned"].as_array().into_iter().flatten() {
            let draining = if s["draining"].as_bool() == Some(true) { "yes" } else { "no" };
            shards.row(vec![
                text(&c["controller"]),
                text(&s["shard"]),
                text(&s["token"]),
                text(&s["keys"]),
                draining.to_owned(),
            ]);
        }
    }
    shards.write_all(out)
}

pub fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

pub fn yaml(v: &Value) -> Result<String, Failure> {
    serde_norway::to_string(v).map_err(|e| Failure(format!("cannot write YAML: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_padded_by_three_spaces_after_the_widest_cell() {
        let mut table = Table::new(&["NAMESPACE", "TYPE", "ID", "VERSION"]);
        table.row(vec!["network".into(), "Links.net.cosi.dev".into(), "eth0".into(), "3".into()]);
        table.row(vec!["config".into(), "Hostnames".into(), "hostname".into(), "12".into()]);
        let mut out = Vec::new();
        table.write_all(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "NAMESPACE   TYPE                 ID         VERSION\n\
             network     Links.net.cosi.dev   eth0       3\n\
             config      Hostnames            hostname   12\n"
        );
    }

    #[test]
    fn shards_print_the_ring_then_each_owned_shard() {
        let c = serde_json::json!({
            "controller": "Widgets", "member": "node-a", "shards": 8,
            "members": ["node-a", "node-b"],
            "owned": [
                { "shard": 1, "token": 41, "keys": 3, "draining": false },
                { "shard": 6, "token": 57, "keys": 0, "draining": true },
            ],
            "draining": [6], "keys": 3,
            "handoffs": { "acquired": 5, "released": 3, "lost": 0 },
        });
        let mut out = Vec::new();
        shard_tables(std::slice::from_ref(&c), false, &mut out).unwrap();
        let ring = "CONTROLLER   MEMBER   OWNED   DRAINING   KEYS   ACQUIRED   RELEASED   LOST   MEMBERS\n\
                    Widgets      node-a   2/8     1          3      5          3          0      node-a,node-b\n";
        assert_eq!(String::from_utf8(out).unwrap(), ring);
        let mut out = Vec::new();
        shard_tables(&[c], true, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!(
                "{ring}\n\
                 CONTROLLER   SHARD   TOKEN   KEYS   DRAINING\n\
                 Widgets      1       41      3      no\n\
                 Widgets      6       57      0      yes\n"
            )
        );
    }

    #[test]
    fn rows_after_the_header_keep_its_widths() {
        let mut table = Table::new(&["*", "ID", "VERSION"]);
        table.row(vec!["+".into(), "a".into(), "1".into()]);
        let mut out = Vec::new();
        table.write_all(&mut out).unwrap();
        table.write_row(&mut out, &["-".into(), "a".into(), "2".into()]).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "*   ID   VERSION\n+   a    1\n-   a    2\n");
    }
}

//! Protocol buffers' wire format, just enough for what kubectl exchanges
//! in it with this server: writing the OpenAPI v2 document (gnostic's
//! `openapi.v2.Document`, `openapi.rs`) and reading a review kubectl sends
//! (`review.rs`). Length-delimited fields only are written and read; other
//! fields are skipped when read.

/// What every Kubernetes protobuf body starts with, before its
/// `runtime.Unknown` envelope.
pub(crate) const MAGIC: &[u8] = b"k8s\0";

fn write_varint(mut n: u64, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn read_varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = bytes.split_first()?;
        *bytes = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// Field `number` holding `bytes` (a string or an embedded message).
pub(crate) fn field(number: u64, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + 4);
    write_varint(number << 3 | 2, &mut out);
    write_varint(bytes.len() as u64, &mut out);
    out.extend_from_slice(bytes);
    out
}

/// A message from its fields.
pub(crate) fn message(fields: impl IntoIterator<Item = Vec<u8>>) -> Vec<u8> {
    fields.into_iter().flatten().collect()
}

/// The length-delimited fields of a message, by field number (the others
/// are skipped); `None` for bytes that are no message.
pub(crate) fn read_fields(mut bytes: &[u8]) -> Option<Vec<(u64, &[u8])>> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let key = read_varint(&mut bytes)?;
        match key & 7 {
            0 => drop(read_varint(&mut bytes)?),
            1 => bytes = bytes.get(8..)?,
            2 => {
                let len = usize::try_from(read_varint(&mut bytes)?).ok()?;
                out.push((key >> 3, bytes.get(..len)?));
                bytes = &bytes[len..];
            }
            5 => bytes = bytes.get(4..)?,
            _ => return None,
        }
    }
    Some(out)
}

/// An object kubectl sends as protobuf (it does for the core group's
/// kinds: `kubectl create namespace`, `create configmap`), in its
/// `runtime.Unknown` envelope (after [`MAGIC`]), read into the JSON it
/// stands for: `apiVersion` and `kind` (the envelope's `typeMeta`),
/// `metadata` (`ObjectMeta`: `name`, `generateName`, `namespace`,
/// `labels`, `annotations`, `finalizers`) and, for a ConfigMap or a
/// Secret, `data` (field 2, a map). Other fields are not read.
pub(crate) fn object(envelope: &[u8]) -> Option<serde_json::Value> {
    use serde_json::{Map, Value};
    let text = |b: &[u8]| String::from_utf8(b.to_vec()).ok().map(Value::String);
    let map = |message: &[u8], number: u64| -> Option<Value> {
        let mut out = Map::new();
        for (n, entry) in read_fields(message)? {
            if n == number {
                let key =
                    String::from_utf8(read_field(entry, 1).unwrap_or_default().to_vec()).ok()?;
                out.insert(key, text(read_field(entry, 2).unwrap_or_default())?);
            }
        }
        Some(Value::Object(out))
    };
    let mut doc = Map::new();
    let kind = match read_field(envelope, 1) {
        Some(type_meta) => {
            if let Some(v) = read_field(type_meta, 1) {
                doc.insert("apiVersion".into(), text(v)?);
            }
            read_field(type_meta, 2).and_then(text)
        }
        None => None,
    };
    if let Some(kind) = &kind {
        doc.insert("kind".into(), kind.clone());
    }
    let raw = read_field(envelope, 2)?;
    if let Some(meta) = read_field(raw, 1) {
        let mut md = Map::new();
        for (number, name) in [(1, "name"), (2, "generateName"), (3, "namespace")] {
            if let Some(v) = read_field(meta, number) {
                md.insert(name.into(), text(v)?);
            }
        }
        md.insert("labels".into(), map(meta, 11)?);
        md.insert("annotations".into(), map(meta, 12)?);
        let finalizers: Option<Vec<Value>> = read_fields(meta)?
            .into_iter()
            .filter(|(n, _)| *n == 14)
            .map(|(_, v)| text(v))
            .collect();
        md.insert("finalizers".into(), Value::Array(finalizers?));
        doc.insert("metadata".into(), Value::Object(md));
    }
    if matches!(kind.as_ref().and_then(Value::as_str), Some("ConfigMap" | "Secret")) {
        doc.insert("data".into(), map(raw, 2)?);
    }
    Some(Value::Object(doc))
}

/// The first length-delimited field `number` of `message`.
pub(crate) fn read_field(message: &[u8], number: u64) -> Option<&[u8]> {
    read_fields(message)?.into_iter().find(|(n, _)| *n == number).map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_reads_back_and_other_fields_are_skipped() {
        let inner = message([field(1, b"a"), field(300, &[7; 200])]);
        // A varint field (number 3) and a fixed64 one (number 4) first.
        let mut bytes = vec![0x18, 0x96, 0x01, 0x21, 0, 0, 0, 0, 0, 0, 0, 0];
        bytes.extend(field(2, &inner));
        let read = read_field(&bytes, 2).unwrap();
        assert_eq!(read, inner.as_slice());
        assert_eq!(read_fields(read).unwrap(), [(1, &b"a"[..]), (300, &[7u8; 200][..])]);
        assert_eq!(read_fields(&bytes[..bytes.len() - 1]), None, "truncated");
    }
}

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

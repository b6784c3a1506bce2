//! The model strategies' logs on the wire and in the trace: postcard (serde's compact binary
//! format: every integer a LEB128 varint, a sequence or map its length then its elements, no
//! field names), so a log costs about what its numbers take, where the JSON it replaced spelt
//! every number in decimal with punctuation and field names. The encoding is deterministic
//! (maps are `BTreeMap`s), so AggrePlay's re-recorded log is still compared byte for byte.

use serde::{de::DeserializeOwned, Serialize};

/// Encode a log.
pub fn encode<T: Serialize>(log: &T) -> Result<Vec<u8>, postcard::Error> {
    postcard::to_allocvec(log)
}

/// Decode a log; an error for any bytes that are not exactly one `T` (trailing bytes too).
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, postcard::Error> {
    let (v, rest) = postcard::take_from_bytes(bytes)?;
    if !rest.is_empty() {
        return Err(postcard::Error::DeserializeBadEncoding);
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggreplay::AggrePlayLog;

    #[test]
    fn round_trip_and_trailing_bytes() {
        let mut l = AggrePlayLog::default();
        l.l.insert(7, vec![0, 1, 1, 0]);
        let b = encode(&l).unwrap();
        let back: AggrePlayLog = decode(&b).unwrap();
        assert_eq!(back.l, l.l);
        let mut longer = b.clone();
        longer.push(0);
        assert!(decode::<AggrePlayLog>(&longer).is_err());
        assert!(decode::<AggrePlayLog>(&b[..b.len() - 1]).is_err());
    }
}

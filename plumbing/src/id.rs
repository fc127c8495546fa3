//! Object ids: 32-byte blake3 digests over a typed header plus the object's canonical bytes.
//!
//! The hashed form is `"<kind> <len>\0" ‖ bytes`, git's `"blob <len>\0"` idea. What the bytes are is
//! documented per kind in `docs/format.md`; no id is ever computed over a bincode layout.

use std::fmt;
use std::str::FromStr;

/// The kinds of object the store holds. The name is part of the hashed header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// One session line, byte for byte as in the file (no trailing newline).
    Entry,
    /// A position in a session tree: the parent's node id (absent at a root) then the entry id.
    Node,
    /// One imported version of a session file: what it appended to the version before it.
    Version,
    /// The overlay of a leaf: winning edits and the shake wall, as canonical JSON.
    Overlay,
    /// One session line with the file's session id taken out (`store::row`): a Claude Code row.
    Row,
    /// A piece of an import state's node table: entry ids with their node ids (`store::state`).
    Table,
}

impl Kind {
    /// Every kind, in the order of their one-byte codes.
    pub const ALL: [Kind; 6] = [Kind::Entry, Kind::Node, Kind::Version, Kind::Overlay, Kind::Row, Kind::Table];

    /// Whether objects of this kind are session lines (an entry, or a row).
    pub fn is_line(self) -> bool {
        matches!(self, Kind::Entry | Kind::Row)
    }

    /// Returns the kind's name as hashed and printed (`entry`, `node`, `version`, `overlay`, `row`,
    /// `table`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Entry => "entry",
            Kind::Node => "node",
            Kind::Version => "version",
            Kind::Overlay => "overlay",
            Kind::Row => "row",
            Kind::Table => "table",
        }
    }

    /// Returns the one-byte code used in pack records.
    pub fn code(self) -> u8 {
        self as u8 + 1
    }

    /// Returns the kind for a pack record code.
    pub fn from_code(code: u8) -> Option<Kind> {
        Kind::ALL.get((code as usize).checked_sub(1)?).copied()
    }

    /// Returns the kind with this name.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A content address: blake3 of the typed header and the canonical bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ObjectId(pub [u8; 32]);

impl ObjectId {
    /// The all-zero id, never the hash of anything; used as "none" in fixed-width records.
    pub const NULL: ObjectId = ObjectId([0; 32]);

    /// Hashes `bytes` as an object of `kind`.
    pub fn hash(kind: Kind, bytes: &[u8]) -> ObjectId {
        // The header `<kind> <length>\0` built on the stack: this runs for every line imported.
        let mut header = [0u8; 48];
        let name = kind.name().as_bytes();
        header[..name.len()].copy_from_slice(name);
        header[name.len()] = b' ';
        let mut at = name.len() + 1;
        let mut digits = [0u8; 20];
        let mut n = bytes.len();
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        header[at..at + digits.len() - i].copy_from_slice(&digits[i..]);
        at += digits.len() - i + 1; // and the NUL, already there
                                    // An object that fits in one blake3 chunk with its header (a node, most lines) is hashed
                                    // in one call, from a copy on the stack: a hasher's set-up and finalising cost more.
        const CHUNK: usize = 1024;
        if at + bytes.len() <= CHUNK {
            let mut whole = [0u8; CHUNK];
            whole[..at].copy_from_slice(&header[..at]);
            whole[at..at + bytes.len()].copy_from_slice(bytes);
            return ObjectId(*blake3::hash(&whole[..at + bytes.len()]).as_bytes());
        }
        let mut hasher = blake3::Hasher::new();
        hasher.update(&header[..at]);
        hasher.update(bytes);
        ObjectId(*hasher.finalize().as_bytes())
    }

    /// Returns the node id of an entry whose parent node is `parent` (`None` at a root).
    pub fn node(parent: Option<&ObjectId>, entry: &ObjectId) -> ObjectId {
        ObjectId::hash(Kind::Node, &node_bytes(parent, entry))
    }

    /// Returns the 64 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        self.to_string()
    }

    /// Returns the first `n` hex digits, for short display.
    pub fn short(&self, n: usize) -> String {
        let mut s = self.to_hex();
        s.truncate(n.min(64));
        s
    }
}

/// Returns `bytes` as lowercase hex digits.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads lowercase hex digits back into bytes; `None` for anything else.
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let text = text.as_bytes();
    text.len().is_multiple_of(2).then_some(())?;
    text.chunks_exact(2).map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?)).collect()
}

/// Returns the canonical bytes of a node object: parent node id (if any) then entry id.
pub fn node_bytes(parent: Option<&ObjectId>, entry: &ObjectId) -> NodeBytes {
    let mut bytes = [0u8; 64];
    let len = match parent {
        Some(p) => {
            bytes[..32].copy_from_slice(&p.0);
            bytes[32..].copy_from_slice(&entry.0);
            64
        }
        None => {
            bytes[..32].copy_from_slice(&entry.0);
            32
        }
    };
    NodeBytes { bytes, len }
}

/// A node object's bytes ([`node_bytes`]), held without an allocation.
pub struct NodeBytes {
    bytes: [u8; 64],
    len: usize,
}

impl std::ops::Deref for NodeBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectId({})", self.short(12))
    }
}

/// Why a string is not an object id.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("not an object id: {0:?} (want 64 hex digits)")]
pub struct ParseIdError(pub String);

impl FromStr for ObjectId {
    type Err = ParseIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let prefix = HexPrefix::parse(s).ok_or_else(|| ParseIdError(s.to_string()))?;
        if prefix.len != 64 {
            return Err(ParseIdError(s.to_string()));
        }
        Ok(ObjectId(prefix.bytes))
    }
}

/// A prefix of an object id, as typed by a person (at least 4 hex digits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HexPrefix {
    /// The digits, packed; digits past `len` are zero.
    pub bytes: [u8; 32],
    /// How many hex digits were given.
    pub len: usize,
}

impl HexPrefix {
    /// Parses 4 to 64 hex digits (either case).
    pub fn parse(s: &str) -> Option<HexPrefix> {
        if !(4..=64).contains(&s.len()) {
            return None;
        }
        let mut bytes = [0u8; 32];
        for (i, c) in s.bytes().enumerate() {
            let v = (c as char).to_digit(16)? as u8;
            bytes[i / 2] |= if i % 2 == 0 { v << 4 } else { v };
        }
        Some(HexPrefix { bytes, len: s.len() })
    }

    /// Tells whether `id` starts with this prefix.
    pub fn matches(&self, id: &ObjectId) -> bool {
        let full = self.len / 2;
        if id.0[..full] != self.bytes[..full] {
            return false;
        }
        self.len.is_multiple_of(2) || (id.0[full] & 0xf0) == self.bytes[full]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_covers_kind_and_length() {
        let a = ObjectId::hash(Kind::Entry, b"{}");
        assert_ne!(a, ObjectId::hash(Kind::Node, b"{}"));
        assert_ne!(a, ObjectId::hash(Kind::Entry, b"{} "));
        // The documented form, spelled out by hand.
        assert_eq!(a.0, *blake3::hash(b"entry 2\0{}").as_bytes());
        // Lengths of every digit count, and the empty object.
        for len in [0, 9, 10, 99, 100, 12_345, 1_048_576] {
            let bytes = vec![b'a'; len];
            let spelled = [format!("overlay {len}\0").into_bytes(), bytes.clone()].concat();
            assert_eq!(ObjectId::hash(Kind::Overlay, &bytes).0, *blake3::hash(&spelled).as_bytes(), "{len}");
        }
        let (p, e) = (ObjectId::hash(Kind::Entry, b"p"), ObjectId::hash(Kind::Entry, b"e"));
        assert_eq!(&node_bytes(None, &e)[..], &e.0[..]);
        assert_eq!(&node_bytes(Some(&p), &e)[..], [p.0, e.0].concat());
    }

    #[test]
    fn hex_round_trip_and_prefixes() {
        let id = ObjectId::hash(Kind::Entry, b"x");
        let hex = id.to_hex();
        assert_eq!(hex.parse::<ObjectId>().unwrap(), id);
        assert!(HexPrefix::parse(&hex[..5]).unwrap().matches(&id));
        assert!(HexPrefix::parse(&hex[..4].to_uppercase()).unwrap().matches(&id));
        let other = if hex.starts_with("0000") { "1111" } else { "0000" };
        assert!(!HexPrefix::parse(other).unwrap().matches(&id));
        assert!(HexPrefix::parse("abc").is_none());
        assert!(HexPrefix::parse("zzzz").is_none());
        assert!("abcd".parse::<ObjectId>().is_err());
    }

    #[test]
    fn kind_codes_round_trip() {
        for k in Kind::ALL {
            assert_eq!(Kind::from_code(k.code()), Some(k));
            assert_eq!(Kind::from_name(k.name()), Some(k));
        }
        assert_eq!(Kind::from_code(0), None);
    }

    #[test]
    fn hex_and_unhex_round_trip() {
        assert_eq!(hex(&[0, 0xab, 0x10]), "00ab10");
        assert_eq!(unhex("00ab10"), Some(vec![0, 0xab, 0x10]));
        for bad in ["0", "0g", "AB", "0 "] {
            assert_eq!(unhex(bad), None, "{bad}");
        }
    }
}

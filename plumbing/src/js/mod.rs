//! JSON as JavaScript reads and writes it (every host's format is JavaScript's JSON), one room
//! from the bottom up: [`scan`] walks JSON text without building values (and checks a line in
//! one pass); [`string`] reads and writes strings as WTF-8 and numbers as JavaScript does;
//! [`value`] is `JSON.parse`'s value ([`Js`]) for the lines serde_json refuses; [`json`] reads
//! members of raw values and writes objects back byte-exact; [`stringify`] is
//! `JSON.stringify(JSON.parse(raw))`, what pi measures.

pub mod json;
pub mod scan;
pub mod string;
pub mod stringify;
pub mod value;

pub use string::{js_number, lossy, string_json, string_text, string_wtf8, utf16_len, write_string, Wtf8Visitor};
pub use value::{depth, has_lone_surrogate, is_stringified, parse, stringified_member, value, Js, Refused, MAX_DEPTH};

//! `JSON.stringify` as JavaScript writes it, for the values pi measures by their JSON text
//! (tool-call arguments, a system message's `toolsAdded`).
//!
//! pi counts `JSON.stringify(arguments).length`, so a file written by another tool (spaces after
//! `:`, `1.0` for a number, `\u00e9` escapes) must be re-serialised the JavaScript way to count
//! what pi counts. Files pi wrote come out unchanged.

use std::borrow::Cow;

use serde_json::value::RawValue;
use serde_json::Value;

use super::value::{parse, Js};

/// Returns `JSON.stringify(JSON.parse(raw))`; the raw text itself when it does not parse.
pub fn stringify(raw: &RawValue) -> Cow<'_, str> {
    match parse(raw.get()) {
        Ok(value) => {
            let out = value.to_json();
            if out == raw.get() {
                Cow::Borrowed(raw.get())
            } else {
                Cow::Owned(out)
            }
        }
        Err(_) => Cow::Borrowed(raw.get()),
    }
}

/// Returns `JSON.stringify(value)` for a value already parsed.
pub fn stringify_value(value: &Value) -> String {
    Js::from_value(value).to_json()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::js::string::js_number;

    fn s(json: &str) -> String {
        let raw: &RawValue = serde_json::from_str(json).unwrap();
        stringify(raw).into_owned()
    }

    #[test]
    fn matches_json_stringify() {
        assert_eq!(
            s(r#"{"a": 1.0, "b" : [1e21, 0.1, 1e-7, 123e-20, -5]}"#),
            r#"{"a":1,"b":[1e+21,0.1,1e-7,1.23e-18,-5]}"#
        );
        assert_eq!(s(r#"{"b":1,"10":2,"2":3,"01":4}"#), r#"{"2":3,"10":2,"b":1,"01":4}"#);
        assert_eq!(s(r#""\u00e9\/\u0001\n""#), "\"é/\\u0001\\n\"");
        assert_eq!(s("12345678901234567890"), "12345678901234567000");
        assert_eq!(js_number(123456.789), "123456.789");
        assert_eq!(js_number(1e20), "100000000000000000000");
    }

    #[test]
    fn canonical_text_is_borrowed() {
        let raw: &RawValue = serde_json::from_str(r#"{"path":"x","n":[1,2]}"#).unwrap();
        assert!(matches!(stringify(raw), Cow::Borrowed(_)));
    }
}

//! A JSON writer that prints exactly what JavaScript's `JSON.stringify` prints for the values the
//! generator uses: no whitespace, pi's key order (the caller's), JS string escapes and JS numbers.

use std::fmt::Write;

/// Appends JSON to a string, inserting the commas itself.
#[derive(Default)]
pub struct Json {
    /// The text written so far.
    pub buf: String,
    /// One flag per open object or array: true until its first member is written.
    first: Vec<bool>,
    /// True right after a key, whose value takes no comma.
    after_key: bool,
}

impl Json {
    /// Returns a writer whose buffer has room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Json {
        Json { buf: String::with_capacity(capacity), ..Json::default() }
    }

    fn value_start(&mut self) {
        if self.after_key {
            self.after_key = false;
        } else if let Some(first) = self.first.last_mut() {
            if !*first {
                self.buf.push(',');
            }
            *first = false;
        }
    }

    /// Opens an object.
    pub fn obj(&mut self) -> &mut Json {
        self.value_start();
        self.buf.push('{');
        self.first.push(true);
        self
    }

    /// Opens an array.
    pub fn arr(&mut self) -> &mut Json {
        self.value_start();
        self.buf.push('[');
        self.first.push(true);
        self
    }

    /// Closes the innermost object.
    pub fn end(&mut self) -> &mut Json {
        self.buf.push('}');
        self.first.pop();
        self
    }

    /// Closes the innermost array.
    pub fn end_arr(&mut self) -> &mut Json {
        self.buf.push(']');
        self.first.pop();
        self
    }

    /// Writes a key; the next value belongs to it.
    pub fn key(&mut self, key: &str) -> &mut Json {
        self.value_start();
        escape_into(&mut self.buf, key);
        self.buf.push(':');
        self.after_key = true;
        self
    }

    /// Writes a string value.
    pub fn str(&mut self, value: &str) -> &mut Json {
        self.value_start();
        escape_into(&mut self.buf, value);
        self
    }

    /// Writes an integer value (exact in JavaScript below 2^53).
    pub fn int(&mut self, value: u64) -> &mut Json {
        debug_assert!(value < 1 << 53, "JavaScript cannot print {value} exactly");
        self.value_start();
        let _ = write!(self.buf, "{value}");
        self
    }

    /// Writes a floating-point value as JavaScript prints it.
    pub fn num(&mut self, value: f64) -> &mut Json {
        self.value_start();
        self.buf.push_str(&js_number(value));
        self
    }

    /// Writes `true` or `false`.
    pub fn bool(&mut self, value: bool) -> &mut Json {
        self.value_start();
        self.buf.push_str(if value { "true" } else { "false" });
        self
    }

    /// Writes `null`.
    pub fn null(&mut self) -> &mut Json {
        self.value_start();
        self.buf.push_str("null");
        self
    }

    /// Writes JSON text that is already serialised the JavaScript way.
    pub fn raw(&mut self, json: &str) -> &mut Json {
        self.value_start();
        self.buf.push_str(json);
        self
    }

    /// Writes `"key":"value"`.
    pub fn kv(&mut self, key: &str, value: &str) -> &mut Json {
        self.key(key).str(value)
    }

    /// Writes `"key":<integer>`.
    pub fn kn(&mut self, key: &str, value: u64) -> &mut Json {
        self.key(key).int(value)
    }
}

/// Appends `s` as a JSON string literal escaped like `JSON.stringify`: only `"`, `\` and
/// U+0000–U+001F are escaped (`\b \f \n \r \t`, else lowercase `\u00xx`); everything else is raw.
pub fn escape_into(buf: &mut String, s: &str) {
    buf.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        buf.push_str(&s[start..i]);
        if escape.is_empty() {
            let _ = write!(buf, "\\u{b:04x}");
        } else {
            buf.push_str(escape);
        }
        start = i + 1;
    }
    buf.push_str(&s[start..]);
    buf.push('"');
}

/// Formats a finite number as JavaScript's `Number.prototype.toString` (and `JSON.stringify`):
/// shortest round-trip digits, exponent form only below 1e-6 or from 1e21, `-0` as `0`.
pub fn js_number(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        // JSON.stringify prints NaN and ±Infinity as null; the generator never produces them.
        return if value.is_finite() { "0".into() } else { "null".into() };
    }
    let magnitude = value.abs();
    if (1e-6..1e21).contains(&magnitude) {
        return format!("{value}");
    }
    let s = format!("{value:e}");
    match s.split_once('e') {
        Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
        _ => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_like_javascript() {
        // Each right-hand side is what node prints for String(x).
        let cases = [
            (5.0, "5"),
            (0.1 + 0.2, "0.30000000000000004"),
            (0.00456, "0.00456"),
            (1e-6, "0.000001"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (1e21, "1e+21"),
            (1.2345678901234568e20, "123456789012345680000"),
            (-0.0, "0"),
            (-2.5, "-2.5"),
            (0.022875, "0.022875"),
        ];
        for (x, js) in cases {
            assert_eq!(js_number(x), js, "{x:e}");
        }
    }

    #[test]
    fn strings_escape_like_javascript() {
        let mut s = String::new();
        escape_into(&mut s, "a\"b\\c\n\t\u{1}\u{8}\u{c}\u{7f}é/\u{2028}");
        assert_eq!(s, "\"a\\\"b\\\\c\\n\\t\\u0001\\b\\f\u{7f}é/\u{2028}\"");
    }

    #[test]
    fn writer_places_commas() {
        let mut j = Json::default();
        j.obj().kv("type", "x").key("a").arr().int(1).str("b").obj().end().end_arr().key("n").null().end();
        assert_eq!(j.buf, r#"{"type":"x","a":[1,"b",{}],"n":null}"#);
    }
}

//! Text to Claude's marked stream: everything before the tiling ([`super`]).
//!
//! Written from ctok 1.3.0's published rules (`normalize.py`, `constants.py`; MIT, Sander Land,
//! `LICENSE.ctok`): the text is normalized (NFC, control and private-use characters stripped,
//! odd spaces folded, v3 folds curly quotes), split into runs of one class (letters, digits,
//! punctuation, spaces, "hard" characters such as ideographs and emoji), and written with the
//! structural markers the measured vocabulary is spelled in: word boundaries around letter runs,
//! case markers in place of capitals, boundaries on punctuation and digits beside a space, and
//! a single space between two words folded into the boundary pair (the seam). Every rule and
//! table is ctok's, measured by its author against Anthropic's `count_tokens`.

use unicode_general_category::{get_general_category, GeneralCategory as G};
use unicode_normalization::char::canonical_combining_class;
use unicode_normalization::UnicodeNormalization;

use std::borrow::Cow;

/// Word start, word end, shift (a title-case word) and caps (an all-caps word): the markers as
/// the vocabulary spells them, noncharacters no text holds once [`escape_markers`] ran.
pub const BOW: char = '\u{FDD0}';
pub const EOW: char = '\u{FDD1}';
pub const SHIFT: char = '\u{FDD3}';
pub const CAPS: char = '\u{FDD4}';

/// Text's own noncharacters U+FDD0..=U+FDD4 are moved to U+E000..=U+E004 (private use, which
/// normalization removed from the text) so they cannot read as markers; they are priced as the
/// characters they were.
const ESCAPE_FROM: u32 = 0xFDD0;
const ESCAPE_TO: u32 = 0xE000;

/// Maps an escaped literal back to the character the text held.
pub fn unescape(c: char) -> char {
    match c as u32 {
        o @ 0xE000..=0xE004 => char::from_u32(o - ESCAPE_TO + ESCAPE_FROM).unwrap_or(c),
        _ => c,
    }
}

/// What differs between the families before the tiling.
#[derive(Clone, Copy, Debug)]
pub struct Rules {
    /// v3 folds the four curly quotes to ASCII.
    pub fold_quotes: bool,
    /// An all-caps word at least this long becomes caps + lowercase (v3: 4; v4.7 has no caps).
    pub allcaps_min: Option<usize>,
    /// The message frame ends in a word start that stands for one leading space (not v4.8+).
    pub frame_bow: bool,
}

/// The measured normalization (ctok's `nfc`): borrowed where it changes nothing.
pub fn normalize(text: &str, fold_quotes: bool) -> Cow<'_, str> {
    // Most text is NFC already, which a quick check of its non-ASCII stretches tells at a
    // fraction of composing it (ASCII is its own NFC, and the normalizer's lookups were a tenth
    // of a count), made as the rest of the normalization reads the text.
    match normalized(text, fold_quotes, true) {
        Some(norm) => norm,
        None => normalized(&text.nfc().collect::<String>(), fold_quotes, false).unwrap_or_default().into_owned().into(),
    }
}

/// What [`normalized`] does with one character.
enum Edit {
    Keep,
    Drop,
    Replace(char),
    /// Thai NIKHAHIT (the character before, kept) + SARA AA: SARA AM.
    SaraAm,
}

/// Printable ASCII, tabs and line feeds: what the normalization keeps as it is.
fn kept_ascii(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b' '..=b'~')
}

/// The rest of the normalization, on NFC text; with `check_nfc`, on any text, `None` when the
/// quick check cannot tell it is NFC (a stretch of non-ASCII characters is not surely NFC: an
/// ASCII character, of combining class 0 and NFC itself, ends what the check carries along).
/// What is kept as it is is not copied: the text is copied only if something changes, and then
/// in runs of what is kept.
fn normalized(text: &str, fold_quotes: bool, check_nfc: bool) -> Option<Cow<'_, str>> {
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    // `text[kept..at]` is kept and not copied yet; `text[..checked]` passed the NFC check.
    let (mut kept, mut at, mut checked) = (0, 0, 0);
    let mut prev_nikhahit = false;
    while at < bytes.len() {
        // Runs of kept ASCII, 16 bytes at a time (a fold the compiler makes one vector test).
        let from = at;
        while at + 16 <= bytes.len() && bytes[at..at + 16].iter().fold(true, |all, &b| all & kept_ascii(b)) {
            at += 16;
        }
        while at < bytes.len() && kept_ascii(bytes[at]) {
            at += 1;
        }
        if at > from {
            prev_nikhahit = false;
            continue;
        }
        if check_nfc && at >= checked && !bytes[at].is_ascii() {
            checked = bytes[at..].iter().position(u8::is_ascii).map_or(bytes.len(), |n| at + n);
            if unicode_normalization::is_nfc_quick(text[at..checked].chars())
                != unicode_normalization::IsNormalized::Yes
            {
                return None;
            }
        }
        let c = text[at..].chars().next().unwrap_or('\0');
        let edit = match c {
            // C0/C1 controls other than TAB, LF and NUL cost nothing; NUL reads as a space.
            '\u{01}'..='\u{08}' | '\u{0B}'..='\u{1F}' | '\u{7F}'..='\u{9F}' => Edit::Drop,
            '\0' => {
                prev_nikhahit = false;
                Edit::Replace(' ')
            }
            // Claude composes Thai NIKHAHIT + SARA AA into SARA AM (which NFC leaves apart).
            '\u{0E32}' if prev_nikhahit => {
                prev_nikhahit = false;
                Edit::SaraAm
            }
            c => {
                prev_nikhahit = c == '\u{0E4D}';
                match c {
                    // BMP private use costs nothing either.
                    '\u{E000}'..='\u{F8FF}' => Edit::Drop,
                    '\u{2018}' | '\u{2019}' if fold_quotes => Edit::Replace('\''),
                    '\u{201C}' | '\u{201D}' if fold_quotes => Edit::Replace('"'),
                    '\u{A0}'
                    | '\u{1680}'
                    | '\u{2000}'..='\u{200A}'
                    | '\u{2028}'
                    | '\u{2029}'
                    | '\u{202F}'
                    | '\u{205F}' => Edit::Replace(' '),
                    _ => Edit::Keep,
                }
            }
        };
        if !matches!(edit, Edit::Keep) {
            let copy = out.get_or_insert_with(|| String::with_capacity(text.len()));
            copy.push_str(&text[kept..at]);
            match edit {
                Edit::Replace(r) => copy.push(r),
                Edit::SaraAm => {
                    // Only dropped controls can stand between it and the NIKHAHIT: that is the
                    // last character copied.
                    copy.pop();
                    copy.push('\u{0E33}');
                }
                Edit::Keep | Edit::Drop => {}
            }
            kept = at + c.len_utf8();
        }
        at += c.len_utf8();
    }
    Some(match out {
        None => Cow::Borrowed(text),
        Some(mut copy) => {
            copy.push_str(&text[kept..]);
            Cow::Owned(copy)
        }
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Wordy,
    Hard,
    Digit,
    Punct,
    Space,
    /// A combining mark with no base before it: it opens a word of its own.
    StrayMark,
}

fn category(c: char) -> G {
    get_general_category(c)
}

fn is_mark(g: G) -> bool {
    matches!(g, G::NonspacingMark | G::SpacingMark | G::EnclosingMark)
}

fn is_letter(g: G) -> bool {
    matches!(g, G::UppercaseLetter | G::LowercaseLetter | G::TitlecaseLetter | G::ModifierLetter | G::OtherLetter)
}

fn is_punct_or_symbol(g: G) -> bool {
    matches!(
        g,
        G::ConnectorPunctuation
            | G::DashPunctuation
            | G::OpenPunctuation
            | G::ClosePunctuation
            | G::InitialPunctuation
            | G::FinalPunctuation
            | G::OtherPunctuation
            | G::MathSymbol
            | G::CurrencySymbol
            | G::ModifierSymbol
            | G::OtherSymbol
    )
}

fn is_punctuation(g: G) -> bool {
    is_punct_or_symbol(g) && !matches!(g, G::MathSymbol | G::CurrencySymbol | G::ModifierSymbol | G::OtherSymbol)
}

/// Non-ASCII symbols that tile over the punctuation vocabulary (enumerated by measurement).
const PUNCT_SYMS: &str = "—»«•°„–−£§€…√→（№†└│།·─═█";
/// The symbols of CJK Symbols and Punctuation that read as ideographic punctuation.
const IDEOGRAPHIC_SYMBOLS: &str = "〄〒〓〠〶〷〾〿";
/// Blocks of symbol-letters that take the full word model.
const SYMBOL_LETTERS: [(u32, u32); 4] = [(0x16EE, 0x16F0), (0x2160, 0x2188), (0x24B6, 0x24E9), (0xA6E6, 0xA6EF)];
/// Case pairs of Unicode 16 the models know (named so older tables agree).
const NEW_CASE_PAIRS: [(char, char); 2] = [('\u{1C89}', '\u{1C8A}'), ('\u{A7CB}', '\u{0264}')];
/// English contraction suffixes an apostrophe binds to the word before it.
const CONTRACTION_SUFFIXES: [&str; 7] = ["s", "t", "d", "m", "ll", "re", "ve"];

fn is_selector(c: char) -> bool {
    ('\u{FE00}'..='\u{FE0F}').contains(&c)
}

fn new_cased(c: char) -> bool {
    NEW_CASE_PAIRS.iter().any(|&(u, l)| c == u || c == l)
}

/// Ideographs, Hangul syllables, every astral character and a few iteration marks.
fn is_hard_cp(o: u32) -> bool {
    o >= 0x10000
        || (0x4E00..=0x9FFF).contains(&o)
        || (0x3400..=0x4DBF).contains(&o)
        || (0xF900..=0xFAFF).contains(&o)
        || (0xAC00..=0xD7A3).contains(&o)
        || matches!(o, 0x3005 | 0x3006 | 0x3031..=0x3035 | 0x303B | 0x303C)
}

/// Most text is ASCII: its classes, worked out once (the rules below cost a scan of the case
/// pairs and a category lookup a character).
static ASCII_CLASSES: std::sync::LazyLock<[Class; 128]> =
    std::sync::LazyLock::new(|| std::array::from_fn(|b| classify_slowly(char::from(b as u8))));

fn classify(c: char) -> Class {
    match c.is_ascii() {
        true => ASCII_CLASSES[c as usize],
        false => classify_slowly(c),
    }
}

fn classify_slowly(c: char) -> Class {
    if new_cased(c) {
        return Class::Wordy;
    }
    let o = c as u32;
    let g = category(c);
    if matches!(g, G::SpaceSeparator | G::LineSeparator | G::ParagraphSeparator) || "\t\n\r\x0c\x0b".contains(c) {
        return Class::Space;
    }
    if SYMBOL_LETTERS.iter().any(|&(lo, hi)| (lo..=hi).contains(&o)) {
        return Class::Wordy;
    }
    if g == G::DecimalNumber && (o < 0x80 || (0x660..=0x669).contains(&o) || (0x6F0..=0x6F9).contains(&o)) {
        return Class::Digit;
    }
    if (o < 0x80 && is_punct_or_symbol(g)) || PUNCT_SYMS.contains(c) {
        return Class::Punct;
    }
    if is_selector(c) {
        return Class::Hard;
    }
    if is_mark(g) {
        return if o < 0x10000 && c.is_alphabetic() { Class::Wordy } else { Class::Hard };
    }
    if is_letter(g) && !is_hard_cp(o) {
        return Class::Wordy;
    }
    Class::Hard
}

// ---- case ----

fn lower_into(c: char, out: &mut String) {
    if c == '\u{03F4}' {
        out.push(c);
    } else if let Some(&(_, l)) = NEW_CASE_PAIRS.iter().find(|p| p.0 == c) {
        out.push(l);
    } else {
        out.extend(c.to_lowercase());
    }
}

fn lower(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    s.chars().for_each(|c| lower_into(c, &mut out));
    out
}

fn lowers_to_itself(c: char) -> bool {
    let mut l = String::new();
    lower_into(c, &mut l);
    l.chars().eq(std::iter::once(c))
}

/// A capital: one that lowers to something else (`ϴ` and caseless Lu letters are not).
fn is_upper(c: char) -> bool {
    c != '\u{03F4}' && (NEW_CASE_PAIRS.iter().any(|p| p.0 == c) || (c.is_uppercase() && !lowers_to_itself(c)))
}

fn is_lower(c: char) -> bool {
    NEW_CASE_PAIRS.iter().any(|p| p.1 == c) || c.is_lowercase()
}

/// A letter run in the form the vocabulary spells it: caps or shift + lowercase where the whole
/// run is all-caps (long enough) or title-case, else as written (ctok's `mark_case`).
fn mark_case(span: &str, allcaps_min: Option<usize>, head_mark: bool) -> String {
    if head_mark || span.contains('ẞ') {
        return span.to_string();
    }
    let mut chars = span.chars();
    let Some(first) = chars.clone().next() else { return String::new() };
    chars.next();
    if span.contains('İ') {
        if is_upper(first) && first != 'İ' && !chars.clone().any(|c| c != 'İ' && is_upper(c)) {
            let mut out = String::from(SHIFT);
            lower_into(first, &mut out);
            chars.for_each(|c| if c == 'İ' { out.push(c) } else { lower_into(c, &mut out) });
            return out;
        }
        return span.to_string();
    }
    let unlowerable = span.chars().any(|c| {
        (new_cased(c) || is_letter(category(c)) || is_mark(category(c)))
            && !is_lower(c)
            && (!is_upper(c) || lowers_to_itself(c))
    });
    let mut cased = span.chars().filter(|&c| is_upper(c) || is_lower(c)).peekable();
    let all_upper = cased.peek().is_some() && cased.all(is_upper);
    if let Some(min) = allcaps_min {
        if all_upper && span.chars().count() >= min && !unlowerable {
            // Caps lowers Σ to σ everywhere (no final sigma).
            let mut out = String::from(CAPS);
            out.push_str(&lower(span).replace('ς', "σ"));
            return out;
        }
    }
    if lowers_to_itself(first) {
        return span.to_string();
    }
    if is_upper(first) && !chars.any(is_upper) {
        let mut out = String::from(SHIFT);
        out.push_str(&lower(span));
        return out;
    }
    span.to_string()
}

/// [`mark_case`] of a run of ASCII letters, written to `out` as [`marked`] writes a word: its case
/// marker, its word start when `bow`, the word, its word end.
fn push_ascii_word(out: &mut Marked, body: &str, allcaps_min: Option<usize>, bow: bool) {
    let b = body.as_bytes();
    let upper = b.iter().filter(|c| c.is_ascii_uppercase()).count();
    let case = match upper {
        n if n == b.len() && allcaps_min.is_some_and(|min| b.len() >= min) => Some(CAPS),
        1 if b[0].is_ascii_uppercase() => Some(SHIFT),
        _ => None,
    };
    out.open(case, bow);
    let at = out.text.len();
    out.text.push_str(body);
    if case.is_some() {
        out.text[at..].make_ascii_lowercase();
    }
    out.close();
}

// ---- runs and their borders ----

fn is_separator(c: char) -> bool {
    (c as u32) < 0x10000 && is_mark(category(c)) && !is_selector(c) && !c.is_alphabetic()
}

fn syriac_vowel(c: char) -> bool {
    c == '\u{0711}' || ('\u{0730}'..='\u{073F}').contains(&c)
}

fn stray_mark(c: char) -> bool {
    // No ASCII character combines.
    !c.is_ascii() && !syriac_vowel(c) && canonical_combining_class(c) != 0 && !is_separator(c)
}

fn marks_like_punct(c: char) -> bool {
    let c = unescape(c);
    let o = c as u32;
    if o >= 0x10000 {
        return false;
    }
    if is_separator(c) {
        return true;
    }
    let g = category(c);
    let ideographic = (0x3001..=0x303F).contains(&o) && (is_punctuation(g) || IDEOGRAPHIC_SYMBOLS.contains(c));
    (is_punct_or_symbol(g) || matches!(g, G::Format | G::Unassigned)) && !ideographic
}

fn digit_border(c: char) -> bool {
    let g = category(c);
    (g == G::OtherNumber || (g == G::DecimalNumber && !c.is_ascii())) && (c as u32) < 0x10000
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum HardKind {
    Punct,
    Number,
    Letter,
}

fn hard_kind(c: char) -> HardKind {
    if marks_like_punct(c) {
        HardKind::Punct
    } else if digit_border(c) {
        HardKind::Number
    } else {
        HardKind::Letter
    }
}

struct Run<'a> {
    class: Class,
    body: &'a str,
}

impl Run<'_> {
    fn first(&self) -> char {
        self.body.chars().next().unwrap_or(' ')
    }
    fn last(&self) -> char {
        self.body.chars().next_back().unwrap_or(' ')
    }
    fn hard_bow(&self) -> bool {
        is_selector(self.first()) || marks_like_punct(self.first())
    }
    fn hard_eow(&self) -> bool {
        is_selector(self.last()) || marks_like_punct(self.last())
    }
    /// A run of decimal digits, or of other numbers, alone.
    fn digit_run(&self) -> bool {
        let g = category(self.first());
        matches!(g, G::DecimalNumber | G::OtherNumber) && self.body.chars().all(|c| category(c) == g)
    }
    fn digit_bow(&self) -> bool {
        self.digit_run() && digit_border(self.first())
    }
    fn digit_eow(&self) -> bool {
        self.digit_run() && digit_border(self.last())
    }
    fn takes_right_border(&self) -> bool {
        self.class == Class::Punct
            || self.hard_eow()
            || (matches!(self.class, Class::Digit | Class::Hard) && self.digit_run() && self.digit_eow())
    }
}

/// Splits text into maximal runs of one class; a hard run is split again where the kind of
/// character changes (punctuation, number, letter), a variation selector riding its base.
fn runs(text: &str) -> Vec<Run<'_>> {
    // A run is a few bytes long: room for most texts' runs at once.
    let mut out = Vec::with_capacity(text.len() / 4 + 1);
    let Some(first) = text.chars().next() else { return out };
    let (bytes, ascii) = (text.as_bytes(), &*ASCII_CLASSES);
    let (mut start, mut at) = (0, first.len_utf8());
    let mut class = classify(first);
    if class == Class::Wordy && stray_mark(first) {
        class = Class::StrayMark;
    }
    while at < bytes.len() {
        // An ASCII character of the run's class goes on with it (no ASCII character is a mark).
        if bytes[at].is_ascii() && ascii[bytes[at] as usize] == class {
            at += 1;
            continue;
        }
        let c = text[at..].chars().next().unwrap_or(' ');
        let k = classify(c);
        // Consecutive unattached marks are one run, as are characters of one class.
        let next = if (class == Class::StrayMark && k == Class::Wordy && stray_mark(c)) || k == class {
            None
        } else if k == Class::Wordy && stray_mark(c) && class != Class::Wordy {
            Some(Class::StrayMark)
        } else {
            Some(k)
        };
        if let Some(next) = next {
            push_run(&mut out, class, &text[start..at]);
            start = at;
            class = next;
        }
        at += c.len_utf8();
    }
    push_run(&mut out, class, &text[start..]);
    out
}

fn push_run<'a>(out: &mut Vec<Run<'a>>, class: Class, body: &'a str) {
    if class != Class::Hard {
        out.push(Run { class, body });
        return;
    }
    let mut start = 0;
    let mut kind = None;
    for (at, c) in body.char_indices() {
        if is_selector(c) && kind.is_some() {
            continue;
        }
        let k = hard_kind(c);
        if kind.is_some_and(|kind| kind != k) {
            out.push(Run { class, body: &body[start..at] });
            start = at;
        }
        kind = Some(k);
    }
    out.push(Run { class, body: &body[start..] });
}

/// A lone `'` that opens the word after it (`'First`): the boundary before it is not absorbed.
fn opens_word(runs: &[Run<'_>], i: usize) -> bool {
    runs[i].body == "'" && runs.get(i + 1).is_some_and(|r| matches!(r.class, Class::Wordy | Class::StrayMark))
}

/// A lone apostrophe left of word `i` that is the word's start (`it's`), as measured.
fn contraction_seam(runs: &[Run<'_>], i: usize) -> bool {
    if i == 0 || !CONTRACTION_SUFFIXES.contains(&runs[i].body) {
        return false;
    }
    let prev = &runs[i - 1];
    if prev.class != Class::Punct || prev.body != "'" {
        return false;
    }
    i < 2 || !runs[i - 2].takes_right_border()
}

/// A marked stream, and where it may be cut for the tiling ([`Marked::cuts`]). Kept by the caller
/// and cleared for each text, so its buffers are allocated once per thread.
#[derive(Default)]
pub struct Marked {
    /// The stream.
    pub text: String,
    /// Offsets in `text`, in order (repeats allowed), where no piece of the vocabulary can span:
    /// after each word end, before each case marker, and before each word start no case marker
    /// precedes (`super::tests::every_vocabulary_cuts_at_markers`). The fewest tokens tiling the
    /// stream are the sum of its segments'.
    pub cuts: Vec<usize>,
}

impl Marked {
    /// Empties both buffers for the next text.
    pub fn clear(&mut self) {
        self.text.clear();
        self.cuts.clear();
    }

    /// Writes the start of a marked span: its case marker if any, then its word start when
    /// `bow`. A single space between a word end and a word start is the boundary pair itself and
    /// is folded away (ctok's seam), unless the word end follows a line feed or opens the stream.
    fn open(&mut self, case: Option<char>, bow: bool) {
        if bow && self.ends_in_seam() {
            self.text.pop();
        }
        // A word with neither (a contraction's suffix, `'s`) is no place to cut: `'s` + word end
        // is a piece.
        if case.is_some() || bow {
            self.cuts.push(self.text.len());
        }
        if let Some(c) = case {
            self.text.push(c);
        }
        if bow {
            self.text.push(BOW);
        }
    }

    /// Whether the stream ends in a word end and one space that a word start written next folds
    /// away (not after a line feed).
    pub fn ends_in_seam(&self) -> bool {
        let b = self.text.as_bytes();
        let n = b.len();
        n >= 5 && b[n - 1] == b' ' && b[n - 4..n - 1] == *EOW_UTF8 && b[n - 5] != b'\n'
    }

    /// Writes a word end.
    fn close(&mut self) {
        self.text.push(EOW);
        self.cuts.push(self.text.len());
    }
}

const EOW_UTF8: &[u8; 3] = b"\xEF\xB7\x91";

/// Writes the marked stream of normalized text (ctok's `stream_norm`) to `out`, its trailing line
/// feeds left out (the frame prices them: [`super`]). `head_space` tells whether the raw text
/// began with a space.
#[cfg(test)]
pub fn marked(norm: &str, rules: Rules, head_space: bool, out: &mut Marked) {
    write(&prepared(norm, rules, head_space), rules, true, out);
}

/// Normalized text as [`write`] takes it: the text's own noncharacters escaped, its trailing line
/// feeds left out, and with `head_space` (the raw text began with a space) the one space the
/// frame's word start stands for.
pub fn prepared(norm: &str, rules: Rules, head_space: bool) -> Cow<'_, str> {
    // U+FDD0..=U+FDD4 are EF B7 90..=94 in UTF-8.
    let b = norm.as_bytes();
    let mut text = Cow::Borrowed(norm);
    if memchr::memchr_iter(0xEF, b).any(|at| b.get(at + 1) == Some(&0xB7) && matches!(b.get(at + 2), Some(0x90..=0x94)))
    {
        text = Cow::Owned(
            norm.chars()
                .map(|c| match c as u32 {
                    o @ 0xFDD0..=0xFDD4 => char::from_u32(o - ESCAPE_FROM + ESCAPE_TO).unwrap_or(c),
                    _ => c,
                })
                .collect(),
        );
    }
    let mut range = 0..text.trim_end_matches('\n').len();
    // The frame's word start stands for one leading space (two or more are a token of their own).
    if rules.frame_bow && head_space && text.starts_with(' ') && !text.starts_with("  ") {
        range.start = 1;
    }
    match text {
        Cow::Borrowed(t) => Cow::Borrowed(&t[range]),
        Cow::Owned(t) => Cow::Owned(t[range].to_string()),
    }
}

/// Splits prepared text into parts whose marked streams, written apart ([`write`], the first
/// part `first`), are the whole's cut where a piece never spans: each part after the first
/// starts with an ASCII letter after a space, tab or line feed. There a letter run opens with
/// its word start (and a cut before it) whatever came before, and no rule reads across the place
/// (a space run's neighbours are read only by punctuation, digits and hard characters, which a
/// letter run is not, and a contraction's apostrophe is no space). The one thing that does is
/// the seam: a part ending in a word end and one space loses that space to the next part's word
/// start ([`Marked::ends_in_seam`]).
pub fn parts(text: &str) -> Parts<'_> {
    Parts { text, from: 0, base: 0, mask: starts(text.as_bytes(), 0), done: false }
}

/// The iterator of [`parts`].
pub struct Parts<'a> {
    text: &'a str,
    /// Where the next part starts.
    from: usize,
    /// The places from `base` on whose byte is a space and the next a letter, one bit each
    /// ([`starts`]), those passed cleared.
    base: usize,
    mask: u64,
    done: bool,
}

impl<'a> Iterator for Parts<'a> {
    type Item = &'a str;

    // Inlined into the count's loop: a part is often one lookup, and a call per part was as
    // much again.
    #[inline(always)]
    fn next(&mut self) -> Option<&'a str> {
        if self.done {
            return None;
        }
        let b = self.text.as_bytes();
        let at = loop {
            if self.mask != 0 {
                let space = self.base + self.mask.trailing_zeros() as usize;
                self.mask &= self.mask - 1;
                break space + 1;
            }
            self.base += 64;
            if self.base + 1 >= b.len() {
                break b.len();
            }
            self.mask = starts(b, self.base);
        };
        let part = &self.text[self.from..at];
        self.from = at;
        self.done = at == b.len();
        Some(part)
    }
}

/// Of the 64 places from `base`, those (a bit each, the lowest first) whose byte is a space, a
/// tab or a line feed and whose next byte is an ASCII letter: where a later part starts, one
/// byte on. Sixteen places a step (SSE2, which every x86-64 has): most parts are a word and
/// what follows it, and finding each one's space with `memchr` (its setup once a part, often
/// twice) was a sixth of a count.
fn starts(b: &[u8], base: usize) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if base + 65 <= b.len() {
        use std::arch::x86_64::*;
        let mut mask = 0u64;
        for k in 0..4 {
            let i = base + 16 * k;
            // SAFETY: SSE2 is part of x86-64; the loads read `b[i..i + 16]` and `b[i + 1..i +
            // 17]`, within `b[base..base + 65]`, in bounds as checked.
            let bits = unsafe {
                let x = _mm_loadu_si128(b.as_ptr().add(i).cast());
                let y = _mm_loadu_si128(b.as_ptr().add(i + 1).cast());
                let is = |c: u8| _mm_cmpeq_epi8(x, _mm_set1_epi8(c as i8));
                let space = _mm_or_si128(_mm_or_si128(is(b' '), is(b'\n')), is(b'\t'));
                // An ASCII letter, either case: `(y | 0x20) - b'a'` at most 25.
                let from_a = _mm_sub_epi8(_mm_or_si128(y, _mm_set1_epi8(0x20)), _mm_set1_epi8(b'a' as i8));
                let letter = _mm_cmpeq_epi8(_mm_min_epu8(from_a, _mm_set1_epi8(25)), from_a);
                _mm_movemask_epi8(_mm_and_si128(space, letter)) as u16
            };
            mask |= u64::from(bits) << (16 * k);
        }
        return mask;
    }
    let end = (base + 64).min(b.len().saturating_sub(1));
    (base..end)
        .filter(|&i| matches!(b[i], b' ' | b'\n' | b'\t') && b[i + 1].is_ascii_alphabetic())
        .fold(0, |mask, i| mask | 1 << (i - base))
}

/// Writes the marked stream of prepared text, or of one of its [`parts`]: the text's first part
/// is `first` (the frame's word start before it).
pub fn write(norm: &str, rules: Rules, first: bool, out: &mut Marked) {
    let runs = runs(norm);
    if runs.is_empty() {
        if first && rules.frame_bow {
            out.open(None, true);
        }
        return;
    }
    let borders_space = |i: usize, left: bool| -> bool {
        let j = if left {
            match i.checked_sub(1) {
                Some(j) => j,
                // A later part opens with a letter run, which never asks.
                None => return first && rules.frame_bow,
            }
        } else {
            i + 1
        };
        let Some(r) = runs.get(j) else { return false };
        if r.class != Class::Space {
            return false;
        }
        if left {
            r.body.ends_with(' ')
        } else {
            r.body.starts_with(' ') && !r.body.starts_with("  ")
        }
    };
    let head = &runs[0];
    let head_quote = opens_word(&runs, 0);
    let own_bow = !head_quote
        && (matches!(head.class, Class::Wordy | Class::Punct | Class::StrayMark)
            || head.hard_bow()
            || (matches!(head.class, Class::Digit | Class::Hard) && head.digit_bow())
            || (head.class == Class::Space && head.body.starts_with(' ')));
    if first && !own_bow && rules.frame_bow {
        match head_quote {
            true => out.text.push(' '),
            false => out.open(None, true),
        }
    }
    for (i, run) in runs.iter().enumerate() {
        let body = run.body;
        match run.class {
            Class::Space => out.text.push_str(body),
            // No case oddity, mark or hard character in ASCII: mark_case's outcome from the bytes.
            Class::Wordy if body.is_ascii() && (i == 0 || runs[i - 1].class != Class::StrayMark) => {
                push_ascii_word(out, body, rules.allcaps_min, !contraction_seam(&runs, i))
            }
            // ASCII digits border nothing (`digit_border`).
            Class::Digit if body.is_ascii() => out.text.push_str(body),
            Class::Wordy => {
                let fused = i > 0 && runs[i - 1].class == Class::StrayMark;
                let marked = mark_case(body, rules.allcaps_min, fused);
                let word = marked.trim_start_matches([SHIFT, CAPS]);
                out.open(
                    marked.chars().next().filter(|_| word.len() < marked.len()),
                    !fused && !contraction_seam(&runs, i),
                );
                out.text.push_str(word);
                out.close();
            }
            Class::StrayMark => {
                out.open(None, true);
                out.text.push_str(body);
                if runs.get(i + 1).is_none_or(|r| r.class != Class::Wordy) {
                    out.close();
                }
            }
            class if class == Class::Punct || run.hard_bow() || run.hard_eow() => {
                let punct = class == Class::Punct;
                if borders_space(i, true) && !opens_word(&runs, i) && (punct || run.hard_bow()) {
                    out.open(None, true);
                }
                out.text.push_str(body);
                if borders_space(i, false) && (punct || run.hard_eow()) {
                    out.close();
                }
            }
            Class::Digit | Class::Hard if run.digit_run() => {
                if run.digit_bow() && borders_space(i, true) {
                    out.open(None, true);
                }
                out.text.push_str(body);
                if run.digit_eow() && borders_space(i, false) {
                    out.close();
                }
            }
            _ => out.text.push_str(body),
        }
    }
}

/// Texts made at random (a xorshift from `seed`) of `bits`, each of fewer than `most` of them:
/// what the tests of the parts compare on.
#[cfg(test)]
pub fn random_texts<'a>(mut seed: u64, bits: &'a [&'a str], most: usize) -> impl Iterator<Item = String> + 'a {
    let mut next = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    std::iter::repeat_with(move || {
        let len = next(most);
        (0..len).map(|_| bits[next(bits.len())]).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parts' starts found sixteen places a step are those a byte-by-byte look finds, in
    /// texts of every length made of spaces, tabs, line feeds, letters either side of them in
    /// ASCII, and the bytes around the letters (`@`, `[`, `` ` ``, `{`) and of other characters.
    #[test]
    fn parts_start_where_a_byte_loop_finds() {
        const BITS: [&str; 14] = [" ", "\n", "\t", "a", "z", "A", "Z", "@", "[", "`", "{", "é", "\r", "0"];
        for text in random_texts(0x9E37_79B9_7F4A_7C15, &BITS, 200).take(3000) {
            let b = text.as_bytes();
            let starts: Vec<usize> = (1..b.len())
                .filter(|&i| matches!(b[i - 1], b' ' | b'\n' | b'\t') && b[i].is_ascii_alphabetic())
                .collect();
            let mut at = 0;
            let found: Vec<usize> = parts(&text)
                .skip(1)
                .map(|p| {
                    at = p.as_ptr() as usize - text.as_ptr() as usize;
                    at
                })
                .collect();
            assert_eq!(found, starts, "{text:?}");
            assert_eq!(parts(&text).collect::<String>(), text);
        }
    }
}

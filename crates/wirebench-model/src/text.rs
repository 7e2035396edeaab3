//! Making text from a peer safe to show: [`escape`] turns every control character (C0, DEL,
//! C1, and the Unicode format and bidi controls that reorder or hide text) into a visible
//! escape and bounds the length, so that a string from the other end can neither forge a
//! log line (CR, LF), drive a terminal (ESC sequences: titles, hyperlinks, cursor moves,
//! clearing the screen) nor hide what it says (bidi overrides, zero-width characters).

/// Longest escaped text, characters, before it is cut with `…`.
pub const MAX_ESCAPED_CHARS: usize = 256;

/// True for characters that must not reach a log or a terminal as they are.
fn is_dangerous(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2069}'
                | '\u{feff}'
                | '\u{fff9}'..='\u{fffb}'
        )
}

/// `s` with every dangerous character escaped (`\n`, `\r`, `\t`, `\x1b`, `\u{202e}`) and
/// cut to [`MAX_ESCAPED_CHARS`] characters.
pub fn escape(s: &str) -> String {
    escape_bounded(s, MAX_ESCAPED_CHARS)
}

/// [`escape`] with a bound of `max_chars` characters of the original text.
pub fn escape_bounded(s: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max_chars * 2));
    for (i, c) in s.chars().enumerate() {
        if i >= max_chars {
            out.push('…');
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_dangerous(c) && (c as u32) < 0x100 => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if is_dangerous(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// `argv` as one POSIX shell line that runs the same command: plain words as they are,
/// others in single quotes, and words with control or direction characters in bash's
/// `$'...'` quoting so those characters are visible (`\n`, `\x1b`, `\u202e`). The one
/// quoting of every "reproduce" line.
pub fn shell_line(argv: &[String]) -> String {
    argv.iter()
        .map(|a| shell_word(a))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One word of [`shell_line`].
pub fn shell_word(a: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:,=@+%".contains(c);
    if !a.is_empty() && a.chars().all(plain) {
        return a.to_string();
    }
    if !a.chars().any(is_dangerous) {
        return format!("'{}'", a.replace('\'', "'\\''"));
    }
    let mut out = String::from("$'");
    for c in a.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            c if is_dangerous(c) && (c as u32) < 0x100 => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if is_dangerous(c) => out.push_str(&format!("\\U{:08x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

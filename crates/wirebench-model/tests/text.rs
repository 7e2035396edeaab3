//! Tests of `wirebench_model::text`.

use wirebench_model::text::*;

#[test]
fn shell_lines_quote_everything_a_shell_would_interpret() {
    let argv: Vec<String> = [
        "wirebench",
        "study",
        "run",
        "my;touch PWNED;.toml",
        "it's",
        "a\x1bb",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(
        shell_line(&argv),
        "wirebench study run 'my;touch PWNED;.toml' 'it'\\''s' $'a\\x1bb'"
    );
    // bash reads it back as the same words.
    let out = std::process::Command::new("bash")
        .args(["-c", &format!("printf '%s\\0' {}", shell_line(&argv))])
        .output()
        .expect("bash");
    let words: Vec<&str> = std::str::from_utf8(&out.stdout)
        .unwrap()
        .split_terminator('\0')
        .collect();
    assert_eq!(words, argv.iter().map(String::as_str).collect::<Vec<_>>());
}

#[test]
fn controls_are_visible_and_length_bounded() {
    assert_eq!(escape("plain text é"), "plain text é");
    assert_eq!(
        escape("ok\n... test finished status=Completed"),
        "ok\\n... test finished status=Completed"
    );
    assert_eq!(escape("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");
    assert_eq!(escape("a\rb\0c\x7f"), "a\\rb\\x00c\\x7f");
    assert_eq!(escape("\u{202e}gnp.exe"), "\\u{202e}gnp.exe");
    assert_eq!(escape("\u{9b}31m"), "\\x9b31m");
    let long = "x".repeat(1000);
    let e = escape(&long);
    assert_eq!(e.chars().count(), MAX_ESCAPED_CHARS + 1);
    assert!(e.ends_with('…'));
}

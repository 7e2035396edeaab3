//! Tests of `wirebench_report::print::profile`.

use wirebench_model::profile::ProfileCategory;
use wirebench_report::print::profile::*;

#[test]
fn share_margin_follows_the_binomial_bound() {
    // 2,500 samples (about 10 s at 241 Hz): ±1.96 points; 100 samples ±9.8.
    assert!((share_margin_pct(2500) - 1.96).abs() < 1e-9);
    assert!((share_margin_pct(100) - 9.8).abs() < 1e-9);
    assert!(share_margin_pct(0).is_finite());
}

#[test]
fn bar_cells_add_up_and_follow_shares() {
    let b = bar(&[
        (ProfileCategory::Copy, 50.0),
        (ProfileCategory::Tcp, 25.0),
        (ProfileCategory::Idle, 25.0),
    ]);
    assert_eq!(b.chars().count(), BAR_WIDTH);
    assert_eq!(b.chars().filter(|&c| c == '█').count(), 32);
    let tcp = GLYPHS[ProfileCategory::Tcp.index()];
    assert_eq!(b.chars().filter(|&c| c == tcp).count(), 16);
    let b = bar(&[
        (ProfileCategory::Copy, 33.3),
        (ProfileCategory::Tcp, 33.3),
        (ProfileCategory::Idle, 33.4),
    ]);
    assert_eq!(b.chars().count(), BAR_WIDTH);
    assert_eq!(cpu_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
}

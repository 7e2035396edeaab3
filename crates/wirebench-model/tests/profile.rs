//! Tests of `wirebench_model::profile`.

use wirebench_model::profile::*;

#[test]
fn categories_index_their_position_and_keys_match_serde() {
    for (i, c) in ProfileCategory::ALL.iter().enumerate() {
        assert_eq!(c.index(), i);
        let json = serde_json::to_string(c).unwrap();
        assert_eq!(json, format!("\"{}\"", c.key()));
    }
}

#[test]
fn per_cpu_figures_of_older_layouts_are_read_by_category() {
    let cpu = |n: usize| CpuProfile {
        cpu: 0,
        samples: 0,
        unsampled_idle_ns: 0,
        unsampled_busy_ns: 0,
        oversampled_busy_ns: 0,
        cpu_ns: (0..n as u64).map(|i| i * 10).collect(),
    };
    let now = cpu(15);
    assert_eq!(now.category_ns(ProfileCategory::Sampler), 110);
    assert_eq!(now.category_ns(ProfileCategory::Idle), 140);
    let before_sampler = cpu(14);
    assert_eq!(before_sampler.category_ns(ProfileCategory::Sampler), 0);
    assert_eq!(before_sampler.category_ns(ProfileCategory::Other), 110);
    assert_eq!(before_sampler.category_ns(ProfileCategory::Idle), 130);
    let before_unsampled = cpu(13);
    assert_eq!(before_unsampled.category_ns(ProfileCategory::Unsampled), 0);
    assert_eq!(
        before_unsampled.category_ns(ProfileCategory::Wirebench),
        100
    );
    assert_eq!(before_unsampled.category_ns(ProfileCategory::Idle), 120);
}

#[test]
fn symbols_are_cut_at_char_boundaries() {
    let long = "é".repeat(150);
    let cut = truncate_symbol(&long);
    assert!(cut.len() <= MAX_SYMBOL_BYTES && cut.len() >= MAX_SYMBOL_BYTES - 1);
    assert_eq!(truncate_symbol("tcp_sendmsg"), "tcp_sendmsg");
}

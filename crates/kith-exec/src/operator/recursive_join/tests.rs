use super::*;

#[test]
fn automatic_policy_needs_lanes_sources_and_memory() {
    let auto = RecursiveSettings::default();
    let gib = 1u64 << 30;
    let ms = Policy::ManyThreadsKMultiSources;
    let ks = Policy::ManyThreadsKSources;
    let (lens, trees) = (Some(LANE_BYTES_PER_NODE), Some(TREE_LANE_BYTES_PER_NODE));
    assert_eq!(auto_policy(&auto, lens, 64, 1_000_000, 2, gib), ms);
    assert_eq!(
        auto_policy(&auto, lens, AUTO_MULTI_SOURCE_MIN, 1000, 2, gib),
        ms
    );
    assert_eq!(auto_policy(&auto, lens, 7, 1000, 2, gib), ks);
    assert_eq!(auto_policy(&auto, None, 64, 1000, 2, gib), ks);
    // 24 bytes x 100 M nodes x 2 threads is past a quarter of 1 GiB.
    assert_eq!(auto_policy(&auto, lens, 64, 100_000_000, 2, gib), ks);
    // Parent trees: 536 bytes x 1 M nodes x 2 threads is too, 65 k
    // nodes are not.
    assert_eq!(auto_policy(&auto, trees, 64, 1_000_000, 2, gib), ks);
    assert_eq!(auto_policy(&auto, trees, 64, 65_536, 2, gib), ms);
    let fixed = RecursiveSettings {
        policy: Some(Policy::OneThreadOneSource),
        ..RecursiveSettings::default()
    };
    assert_eq!(
        auto_policy(&fixed, lens, 64, 1000, 2, gib),
        Policy::OneThreadOneSource
    );
}

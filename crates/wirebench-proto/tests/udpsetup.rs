//! Tests of `wirebench_proto::udpsetup`.

use std::net::{Ipv4Addr, Ipv6Addr};

use std::net::IpAddr;
use wirebench_proto::data::Token;
use wirebench_proto::udpsetup::*;

#[test]
fn round_trips_and_refusals() {
    for port in [1u16, 5301, 65535] {
        assert_eq!(decode_port(&encode_port(port)), Ok(port));
    }
    assert_eq!(decode_port(&encode_port(0)), Err(UdpSetupError::ZeroPort));
    let mut m = encode_port(9);
    m[7] = 1;
    assert_eq!(decode_port(&m), Err(UdpSetupError::BadPadding));
    assert!(matches!(
        decode_port(&ACK),
        Err(UdpSetupError::BadMagic { .. })
    ));
    assert_eq!(decode_ack(&ACK), Ok(()));
    assert!(decode_ack(&encode_port(9)).is_err());
    let mut a = ACK;
    a[5] = 3;
    assert_eq!(decode_ack(&a), Err(UdpSetupError::BadPadding));
    let t = Token([3; wirebench_proto::data::TOKEN_BYTES]);
    assert!(is_hello(&hello(t, 4), t, 4));
    assert!(!is_hello(&hello(t, 4), t, 5));
    assert!(!is_hello(&hello(t, 4)[..10], t, 4));
}

#[test]
fn same_host_sees_through_v4_mapping() {
    let v4 = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1));
    let mapped = IpAddr::V6(Ipv4Addr::new(127, 0, 0, 1).to_ipv6_mapped());
    assert!(same_host(v4, mapped));
    assert!(same_host(mapped, v4));
    assert!(!same_host(v4, IpAddr::V4(Ipv4Addr::new(127, 0, 0, 55))));
    assert!(!same_host(IpAddr::V6(Ipv6Addr::LOCALHOST), v4));
}

#[test]
fn fuzz_body_on_edge_inputs() {
    fuzz_udp_setup(&[]);
    fuzz_udp_setup(&ACK);
    fuzz_udp_setup(&encode_port(77));
    fuzz_udp_setup(&[0xff; 64]);
}

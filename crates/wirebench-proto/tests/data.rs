//! Tests of `wirebench_proto::data`.

use wirebench_proto::data::*;

#[test]
fn classify_preambles() {
    assert_eq!(classify(b"WBC1"), Ok(ConnKind::Control));
    assert_eq!(classify(b"WBD1"), Ok(ConnKind::Data));
    for m in [b"GET ", b"POST", b"HEAD", b"PUT "] {
        let e = classify(m).unwrap_err();
        assert!(e.to_string().contains("looks like HTTP"), "{e}");
    }
    let e = classify(&[0x16, 0x03, 0x01, 0x02]).unwrap_err();
    assert!(e.to_string().contains("looks like TLS"), "{e}");
    let e = classify(b"SSH-").unwrap_err();
    assert!(e.to_string().contains("SSH"), "{e}");
    let e = classify(b"WBC2").unwrap_err();
    assert!(matches!(e, PreambleError::OtherVersion(_)), "{e}");
    let e = classify(&[0, 1, 0xab, 0xff]).unwrap_err();
    assert_eq!(e.to_string(), "unknown preamble 0001abff");
}

#[test]
fn token_hex_round_trip() {
    let t = Token([
        0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee,
        0xff,
    ]);
    let h = t.to_hex();
    assert_eq!(h, "00112233445566778899aabbccddeeff");
    assert_eq!(Token::from_hex(&h), Ok(t));
    assert!(matches!(
        Token::from_hex(&h.to_uppercase()),
        Err(TokenError::NotHex(_))
    ));
    assert_eq!(Token::from_hex(""), Err(TokenError::Length(0)));
    assert_eq!(Token::from_hex(&h[..31]), Err(TokenError::Length(31)));
    assert_eq!(
        Token::from_hex(&format!("{h}0")),
        Err(TokenError::Length(33))
    );
    let bad = format!("{}g", &h[..31]);
    assert_eq!(Token::from_hex(&bad), Err(TokenError::NotHex(31)));
    // 32 bytes but multi-byte characters.
    let multi = "é".repeat(16);
    assert!(Token::from_hex(&multi).is_err());
    assert!(Token::from_hex("+0112233445566778899aabbccddeeff").is_err());
}

#[test]
fn token_ct_eq_and_debug() {
    let a = Token([7; 16]);
    let mut b = a;
    assert!(a.ct_eq(&b));
    b.0[15] ^= 1;
    assert!(!a.ct_eq(&b));
    b = a;
    b.0[0] ^= 0x80;
    assert!(!a.ct_eq(&b));
    let dbg = format!("{a:?}");
    assert_eq!(dbg, "Token(…)");
    assert!(!dbg.contains("07"));
    let hello = DataHello { token: a, flow: 3 };
    assert!(!format!("{hello:?}").contains("07"));
}

#[test]
fn data_hello_round_trip() {
    let h = DataHello {
        token: Token([0xab; 16]),
        flow: 0x0102_0304,
    };
    let bytes = h.encode();
    assert_eq!(bytes.len(), 24);
    assert_eq!(&bytes[..4], b"WBD1");
    assert_eq!(&bytes[20..], &[1, 2, 3, 4]);
    assert_eq!(
        classify(&[bytes[0], bytes[1], bytes[2], bytes[3]]),
        Ok(ConnKind::Data)
    );
    assert_eq!(DataHello::decode_body(&bytes[4..]), Ok(h));
    assert_eq!(
        DataHello::decode_body(&bytes[4..23]),
        Err(DataHelloError::Length(19))
    );
    assert_eq!(
        DataHello::decode_body(&bytes),
        Err(DataHelloError::Length(24))
    );
    assert_eq!(DataHello::decode_body(&[]), Err(DataHelloError::Length(0)));
}

//! Where a webhook may point: the URL's form, and, unless private addresses are allowed, only
//! public hosts, checked on the URL and again on every address a host name resolves to.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::MAX_URL;

/// Checks a webhook URL: absolute `http` or `https` (the latter in a build with the default
/// `webhook-tls` feature) with a host, no credentials, no fragment, at most [`MAX_URL`] bytes and, unless
/// `allow_private`, no host that is a non-public address or `localhost`.
pub fn validate_url(url: &str, allow_private: bool) -> Result<(), String> {
    if url.len() > MAX_URL {
        return Err(format!("url is longer than {MAX_URL} bytes"));
    }
    let parsed =
        reqwest::Url::parse(url).map_err(|e| format!("url {url:?} is not an absolute URL: {e}"))?;
    match parsed.scheme() {
        "http" => {}
        "https" if cfg!(feature = "webhook-tls") => {}
        "https" => {
            return Err(
                "this server was built without TLS for webhooks (feature webhook-tls): \
                 use an http:// url"
                    .into(),
            );
        }
        other => return Err(format!("url must be http:// or https://, not {other}:")),
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err("url has no host".into());
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("url must not carry credentials".into());
    }
    if parsed.fragment().is_some() {
        return Err("url must not have a fragment".into());
    }
    if !allow_private {
        // The parser has normalised IP hosts (`2130706433` is `127.0.0.1`; IPv6 in brackets).
        let host = parsed.host_str().unwrap_or_default();
        let private = match host.trim_start_matches('[').trim_end_matches(']').parse() {
            Ok(ip) => !is_public(ip),
            Err(_) => {
                let name = host.trim_end_matches('.').to_ascii_lowercase();
                name == "localhost" || name.ends_with(".localhost")
            }
        };
        if private {
            return Err(
                "url must name a public host: loopback, private and link-local addresses \
                 are refused on this server (MISSIVE_WEBHOOK_ALLOW_PRIVATE)"
                    .into(),
            );
        }
    }
    Ok(())
}

/// Whether `ip` is a globally routable unicast address: not loopback, private, link-local,
/// shared (CGNAT), unspecified, broadcast, multicast, documentation, benchmarking or reserved;
/// an IPv4-mapped or -compatible IPv6 address is judged as its IPv4 address.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4() {
            Some(v4) if v6.segments()[..5] == [0; 5] => is_public_v4(v4),
            _ => is_public_v6(v6),
        },
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_documentation()
        || ip.is_multicast()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (18..20).contains(&b))
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first == 0x2001 && ip.segments()[1] == 0x0db8)
        || (first == 0x0064 && ip.segments()[1] == 0xff9b))
}

/// A resolver that keeps only public addresses (see [`is_public`]); a name with none left is
/// an error, so the connection is never attempted.
#[derive(Debug, Default)]
pub struct PublicOnly;

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let all: Vec<_> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<_> = all.into_iter().filter(|a| is_public(a.ip())).collect();
            if public.is_empty() {
                return Err(format!("{host} resolves to no public address").into());
            }
            Ok(Box::new(public.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_absolute_http_urls_without_credentials_are_accepted() {
        for good in [
            "http://game.example/hooks/turn",
            "http://203.0.113.9.nip.example:8080/x?y=1",
            "http://8.8.8.8/x",
            "http://[2606:4700::1111]/x",
        ] {
            assert_eq!(validate_url(good, false), Ok(()), "{good}");
        }
        assert_eq!(
            validate_url("https://game.example/hooks/turn", false).is_ok(),
            cfg!(feature = "webhook-tls")
        );
        let long = format!("http://a.example/{}", "x".repeat(MAX_URL));
        for bad in [
            "",
            "/relative",
            "ftp://a.example/",
            "file:///etc/passwd",
            "http://user:pw@a.example/",
            "http://a.example/#frag",
            "not a url",
            long.as_str(),
        ] {
            assert!(validate_url(bad, true).is_err(), "{bad}");
        }
    }

    #[test]
    fn urls_inside_the_servers_network_are_refused_unless_allowed() {
        for inside in [
            "http://127.0.0.1:8080/x",
            "http://localhost/x",
            "http://LOCALHOST./x",
            "http://db.localhost/x",
            "http://10.1.2.3/x",
            "http://172.16.0.1/x",
            "http://192.168.1.1/x",
            "http://169.254.169.254/latest/meta-data",
            "http://100.64.0.1/x",
            "http://0.0.0.0/x",
            "http://[::1]/x",
            "http://[fd00::1]/x",
            "http://[fe80::1]/x",
            "http://[::ffff:127.0.0.1]/x",
            "http://2130706433/x",
        ] {
            let refused = validate_url(inside, false).expect_err(inside);
            assert!(refused.contains("public host"), "{inside}: {refused}");
            assert_eq!(validate_url(inside, true), Ok(()), "{inside}");
        }
    }

    #[test]
    fn public_means_globally_routable() {
        for (ip, public) in [
            ("8.8.8.8", true),
            ("203.0.112.1", true),
            ("127.0.0.1", false),
            ("10.0.0.1", false),
            ("172.31.255.255", false),
            ("172.32.0.1", true),
            ("192.168.0.1", false),
            ("169.254.1.1", false),
            ("100.64.0.1", false),
            ("100.128.0.1", true),
            ("192.0.0.8", false),
            ("192.0.2.1", false),
            ("198.18.0.1", false),
            ("224.0.0.1", false),
            ("240.0.0.1", false),
            ("255.255.255.255", false),
            ("2606:4700::1111", true),
            ("::1", false),
            ("::", false),
            ("fc00::1", false),
            ("fe80::1", false),
            ("ff02::1", false),
            ("2001:db8::1", false),
            ("64:ff9b::a00:1", false),
            ("::ffff:10.0.0.1", false),
            ("::ffff:8.8.8.8", true),
        ] {
            let ip: IpAddr = ip.parse().expect(ip);
            assert_eq!(is_public(ip), public, "{ip}");
        }
    }

    #[tokio::test]
    async fn the_resolver_drops_addresses_inside_the_network() {
        use reqwest::dns::Resolve;
        let name: reqwest::dns::Name = "localhost".parse().expect("a name");
        let refused = match PublicOnly.resolve(name).await {
            Ok(addrs) => panic!("localhost resolved to {:?}", addrs.collect::<Vec<_>>()),
            Err(e) => e.to_string(),
        };
        assert!(refused.contains("no public address"), "{refused}");
    }
}

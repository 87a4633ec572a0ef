//! One OCI registry conversation: the distribution protocol spoken with
//! every answer bounded. A registry and what it serves are hostile: each
//! answer has a total time limit (body included), a manifest and a layer a
//! size limit checked while reading, and every blob and manifest is
//! checked against its digest before anything uses it. Pushing goes
//! through `oci-wasm` (the `application/wasm` layout `wkg` writes).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::OciImageManifest;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};
use sha2::{Digest as _, Sha256};

use super::credentials;
use crate::settings::Settings;

/// The media type of a wasm layer (`oci-wasm`, `wkg`).
pub const WASM_LAYER: &str = oci_wasm::WASM_LAYER_MEDIA_TYPE;

/// The manifest types asked for (an OCI image manifest; Docker's v2 for
/// registries that answer with it).
const MANIFEST_TYPES: &str =
    "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";

/// How toolhost talks to registries: the bounds of an answer, which hosts
/// take plain HTTP, and the credentials given on the command line.
#[derive(Debug, Clone)]
pub struct RegistryOptions {
    /// Registries (`host` or `host:port`) spoken to over plain HTTP besides
    /// loopback ones.
    pub insecure: Vec<String>,
    /// The most one answer may take, body included.
    pub timeout: Duration,
    /// The largest manifest read.
    pub max_manifest_bytes: u64,
    /// The largest layer (a component) read.
    pub max_layer_bytes: u64,
    /// Credentials given explicitly (`--username` / `--password-stdin`);
    /// else the Docker configuration's are used.
    pub credentials: Option<(String, String)>,
}

impl RegistryOptions {
    /// The options of `[registry]` and `[limits] max_component_bytes`.
    pub fn from_settings(settings: &Settings) -> Self {
        Self {
            insecure: settings.registry.insecure.clone(),
            timeout: Duration::from_millis(settings.registry.timeout_ms.max(1)),
            max_manifest_bytes: settings.registry.max_manifest_bytes,
            max_layer_bytes: settings.limits.max_component_bytes,
            credentials: None,
        }
    }
}

/// A manifest as read: its bytes (checked against `digest`) and parsed.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// The digest of `bytes` (`sha256:…`), computed here.
    pub digest: String,
    /// The bytes the registry answered.
    pub bytes: Vec<u8>,
    /// `bytes` parsed.
    pub parsed: OciImageManifest,
}

/// A client of the registries of references, with the bounds of
/// [`RegistryOptions`].
pub struct Registry {
    options: RegistryOptions,
    http: reqwest::Client,
    /// Bearer tokens by registry and repository (`None`: none needed).
    tokens: tokio::sync::Mutex<HashMap<String, Option<String>>>,
}

impl Registry {
    /// A client with `options`.
    pub fn new(options: RegistryOptions) -> Result<Self> {
        // The total limit of an answer is `get`'s (one timeout around the
        // request and its whole body, which names what took too long).
        let http = reqwest::Client::builder()
            .connect_timeout(options.timeout)
            .redirect(reqwest::redirect::Policy::limited(5))
            .build()
            .context("setting up the HTTP client for registries")?;
        Ok(Self { options, http, tokens: Default::default() })
    }

    /// The options this client keeps.
    pub fn options(&self) -> &RegistryOptions {
        &self.options
    }

    /// An `oci-client` client for `registry`, speaking the scheme
    /// [`Registry::scheme`] chose.
    fn oci(&self, registry: &str) -> Client {
        let plain = if self.scheme(registry) == "http" { vec![registry.to_string()] } else { Vec::new() };
        Client::new(ClientConfig {
            protocol: ClientProtocol::HttpsExcept(plain),
            read_timeout: Some(self.options.timeout),
            connect_timeout: Some(self.options.timeout),
            ..Default::default()
        })
    }

    /// `http` or `https` for `registry`: plain HTTP for loopback and for
    /// the hosts given as insecure (said on stderr, once per registry).
    fn scheme(&self, registry: &str) -> &'static str {
        let plain =
            is_loopback(registry) || self.options.insecure.iter().any(|h| h == registry || h == host_of(registry));
        if !plain {
            return "https";
        }
        static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
        let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
        if !said.iter().any(|r| r == registry) {
            said.push(registry.to_string());
            let why = if is_loopback(registry) { "a loopback address" } else { "given as an insecure registry" };
            eprintln!("toolhost: speaking plain HTTP (no TLS) to registry {registry}: {why}");
        }
        "http"
    }

    /// The credentials for `registry`: the explicit ones, else the Docker
    /// configuration's (config file, credential helpers), else anonymous.
    fn auth(&self, registry: &str) -> RegistryAuth {
        match &self.options.credentials {
            Some((user, password)) => RegistryAuth::Basic(user.clone(), password.clone()),
            None => credentials::from_docker(registry),
        }
    }

    /// The `Authorization` header value for `reference`'s repository
    /// (`operation` pull or push), if one is needed.
    async fn authorization(&self, reference: &Reference, operation: RegistryOperation) -> Result<Option<String>> {
        let registry = reference.resolve_registry();
        let key = format!("{registry}/{}/{operation:?}", reference.repository());
        if let Some(known) = self.tokens.lock().await.get(&key) {
            return Ok(known.clone());
        }
        let auth = self.auth(registry);
        let token = tokio::time::timeout(self.options.timeout, self.oci(registry).auth(reference, &auth, operation))
            .await
            .map_err(|_| anyhow!("registry {registry} did not answer within {:?}", self.options.timeout))?
            .map_err(|e| unreachable_or(registry, e.into()))?;
        let header = match (token, &auth) {
            (Some(token), _) => Some(format!("Bearer {token}")),
            (None, RegistryAuth::Basic(user, password)) => {
                use base64::Engine as _;
                Some(format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
                ))
            }
            _ => None,
        };
        self.tokens.lock().await.insert(key, header.clone());
        Ok(header)
    }

    /// One bounded GET of `path` under `reference`'s repository
    /// (`manifests/…`, `blobs/…`): at most `max` bytes, within the time
    /// limit; `None` when the registry answers 404.
    async fn get(
        &self,
        reference: &Reference,
        path: &str,
        accept: &str,
        max: u64,
        what: &str,
    ) -> Result<Option<(Vec<u8>, Option<String>)>> {
        let registry = reference.resolve_registry();
        let url = format!("{}://{registry}/v2/{}/{path}", self.scheme(registry), reference.repository());
        let auth = self.authorization(reference, RegistryOperation::Pull).await?;
        let deadline = self.options.timeout;
        let read = async {
            let mut request = self.http.get(&url).header(reqwest::header::ACCEPT, accept);
            if let Some(auth) = auth {
                request = request.header(reqwest::header::AUTHORIZATION, auth);
            }
            let mut response = request.send().await.map_err(|e| unreachable_or(registry, e.into()))?;
            let status = response.status();
            if status == reqwest::StatusCode::NOT_FOUND {
                return Ok(None);
            }
            if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
                bail!(
                    "registry {registry} answered {} for {what}: give credentials with --username/--password-stdin or `docker login {registry}`",
                    status.as_u16()
                );
            }
            if !status.is_success() {
                bail!("registry {registry} answered {status} for {what}");
            }
            if let Some(len) = response.content_length()
                && len > max
            {
                bail!("registry {registry} offered {what} of {len} bytes, more than the {max} allowed");
            }
            let claimed =
                response.headers().get("docker-content-digest").and_then(|v| v.to_str().ok()).map(str::to_string);
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.with_context(|| format!("reading {what} from {registry}"))? {
                if body.len() as u64 + chunk.len() as u64 > max {
                    bail!("registry {registry} sent more than {max} bytes for {what}; refused");
                }
                body.extend_from_slice(&chunk);
            }
            Ok(Some((body, claimed)))
        };
        tokio::time::timeout(deadline, read)
            .await
            .map_err(|_| anyhow!("registry {registry} did not finish answering {what} within {deadline:?}"))?
    }

    /// The manifest `reference` names (by tag or digest), its digest
    /// computed from the bytes; a reference by digest must match it.
    /// `Ok(None)`: the registry has no such manifest.
    pub async fn manifest(&self, reference: &Reference) -> Result<Option<Manifest>> {
        let name = reference.digest().or(reference.tag()).unwrap_or("latest").to_string();
        let what = format!("the manifest of {reference}");
        let Some((bytes, claimed)) = self
            .get(reference, &format!("manifests/{name}"), MANIFEST_TYPES, self.options.max_manifest_bytes, &what)
            .await?
        else {
            return Ok(None);
        };
        let digest = sha256_digest(&bytes);
        if let Some(claimed) = claimed
            && claimed.starts_with("sha256:")
            && claimed != digest
        {
            bail!(
                "digest mismatch: registry {} says the manifest of {reference} is {claimed} but sent bytes of {digest}; refused",
                reference.resolve_registry()
            );
        }
        if let Some(wanted) = reference.digest()
            && wanted != digest
        {
            bail!("digest mismatch: registry answered a manifest for {reference} whose digest is {digest}; refused");
        }
        let parsed: OciImageManifest = serde_json::from_slice(&bytes)
            .with_context(|| format!("{what} is not an OCI image manifest (an image index or another format)"))?;
        Ok(Some(Manifest { digest, bytes, parsed }))
    }

    /// The blob `digest` of `reference`'s repository, at most `max` bytes,
    /// checked against its digest.
    pub async fn blob(&self, reference: &Reference, digest: &str, max: u64, what: &str) -> Result<Vec<u8>> {
        check_digest_syntax(digest)?;
        let (bytes, _) = self
            .get(reference, &format!("blobs/{digest}"), "*/*", max, what)
            .await?
            .ok_or_else(|| anyhow!("registry {} has no blob {digest} ({what})", reference.resolve_registry()))?;
        let actual = sha256_digest(&bytes);
        if actual != digest {
            bail!("digest mismatch: registry answered {what} whose digest is {actual}, not {digest}; refused");
        }
        Ok(bytes)
    }

    /// Pushes the component `bytes` to `reference` (which names a tag) in
    /// the wasm layout of `oci-wasm` (its WIT world in the config, as `wkg`
    /// writes it); answers the manifest digest.
    pub async fn push_component(&self, reference: &Reference, bytes: Vec<u8>) -> Result<String> {
        let (config, layer) = oci_wasm::WasmConfig::from_raw_component(bytes, None)
            .context("reading the component's WIT world for the artifact's config")?;
        let registry = reference.resolve_registry().to_string();
        let client = oci_wasm::WasmClient::new(self.oci(&registry));
        let auth = self.auth(&registry);
        self.bounded_push(&registry, client.push(reference, &auth, layer, config, None)).await?;
        self.pushed_digest(reference).await
    }

    /// Pushes a cosign signature of the manifest `digest` of `reference`'s
    /// repository: the simple-signing `payload` and its base64
    /// `signature`, as the one layer of the manifest tagged
    /// `sha256-<hex>.sig` (replacing the signatures there); answers that
    /// reference.
    pub async fn push_signature(
        &self,
        reference: &Reference,
        digest: &str,
        payload: Vec<u8>,
        signature: String,
    ) -> Result<Reference> {
        let tag = super::signature::signature_tag(digest);
        let sig_ref = Reference::with_tag(reference.registry().to_string(), reference.repository().to_string(), tag);
        let layer = ImageLayer {
            data: payload.into(),
            media_type: super::signature::SIMPLESIGNING.to_string(),
            annotations: Some(BTreeMap::from([(super::signature::SIGNATURE_ANNOTATION.to_string(), signature)])),
        };
        let config = Config {
            data: b"{}".to_vec().into(),
            media_type: "application/vnd.oci.image.config.v1+json".to_string(),
            annotations: None,
        };
        self.push_artifact(&sig_ref, layer, config).await?;
        Ok(sig_ref)
    }

    /// Pushes a manifest of one layer (`layer`) and the config `config` to
    /// `reference`; answers its digest.
    async fn push_artifact(&self, reference: &Reference, layer: ImageLayer, config: Config) -> Result<String> {
        let registry = reference.resolve_registry().to_string();
        let auth = self.auth(&registry);
        let layers = vec![layer];
        let manifest = OciImageManifest::build(&layers, &config, None);
        self.bounded_push(&registry, self.oci(&registry).push(reference, &layers, config, &auth, Some(manifest)))
            .await?;
        self.pushed_digest(reference).await
    }

    /// Waits for a push within the time limit (per answer, so a push of
    /// several requests gets it several times over), naming the cause.
    async fn bounded_push<T, E: Into<anyhow::Error>>(
        &self,
        registry: &str,
        push: impl std::future::Future<Output = std::result::Result<T, E>>,
    ) -> Result<T> {
        let limit = self.options.timeout * 8;
        match tokio::time::timeout(limit, push).await {
            Err(_) => bail!("pushing to registry {registry} took longer than {limit:?}"),
            Ok(Err(e)) => {
                let e: anyhow::Error = e.into();
                let text = format!("{e:#}");
                if text.contains("401") || text.to_lowercase().contains("unauthorized") {
                    bail!(
                        "registry {registry} refused the push ({text}): give credentials with --username/--password-stdin or `docker login {registry}`"
                    );
                }
                Err(unreachable_or(registry, e))
            }
            Ok(Ok(v)) => Ok(v),
        }
    }

    /// The digest of the manifest just pushed to `reference`, read back.
    async fn pushed_digest(&self, reference: &Reference) -> Result<String> {
        self.tokens.lock().await.clear();
        let manifest = self.manifest(reference).await?.ok_or_else(|| {
            anyhow!("registry {} accepted the push but has no manifest for {reference}", reference.resolve_registry())
        })?;
        Ok(manifest.digest)
    }
}

/// `sha256:` and the lowercase hex SHA-256 of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Refuses a digest that is not `sha256:` and 64 lowercase hex digits (it
/// becomes a URL path and a file name).
pub fn check_digest_syntax(digest: &str) -> Result<&str> {
    match digest.strip_prefix("sha256:") {
        Some(hex) if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) => {
            Ok(hex)
        }
        _ => bail!("'{digest}' is not a sha256 digest (sha256: and 64 lowercase hex digits)"),
    }
}

/// The host of `registry` (`host:port`, `[v6]:port`) without its port.
fn host_of(registry: &str) -> &str {
    if let Some(rest) = registry.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    registry.rsplit_once(':').map_or(registry, |(host, _)| host)
}

/// Whether `registry` is on this machine's loopback.
pub fn is_loopback(registry: &str) -> bool {
    let host = host_of(registry);
    host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// An error reaching `registry`, said as such when it is one (refused, no
/// route, name unknown), else `e` as it was.
fn unreachable_or(registry: &str, e: anyhow::Error) -> anyhow::Error {
    let text = format!("{e:#}");
    let lower = text.to_lowercase();
    if ["connect", "refused", "dns", "resolve", "unreachable", "timed out"].iter().any(|w| lower.contains(w)) {
        anyhow!(
            "registry {registry} is unreachable ({text}); check that it runs and the address, or work offline from the cache with a locked digest"
        )
    } else {
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_registries_are_recognised_with_and_without_ports() {
        for r in ["127.0.0.1:5000", "localhost", "localhost:5000", "[::1]:5000", "127.1.2.3"] {
            assert!(is_loopback(r), "{r}");
        }
        for r in ["registry.example", "10.0.0.1:5000", "ghcr.io"] {
            assert!(!is_loopback(r), "{r}");
        }
    }

    #[test]
    fn only_sha256_digests_of_64_hex_digits_pass() {
        assert!(check_digest_syntax(&sha256_digest(b"x")).is_ok());
        for bad in ["sha256:../../etc", "sha512:ab", "sha256:ABCDEF", ""] {
            assert!(check_digest_syntax(bad).is_err(), "{bad}");
        }
    }
}

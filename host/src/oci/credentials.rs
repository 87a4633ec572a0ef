//! Registry credentials as the Docker CLI finds them: `$DOCKER_CONFIG/config.json`
//! (else `~/.docker/config.json`), its `auths` entries and its credential
//! helpers (`credHelpers`, `credsStore`), through the `docker_credential`
//! crate. Nothing found means an anonymous request.

use oci_client::secrets::RegistryAuth;

/// The credentials the Docker configuration holds for `registry`
/// (`host:port`), or anonymous.
pub fn from_docker(registry: &str) -> RegistryAuth {
    // Docker Hub's entry is kept under its old URL.
    let server =
        if registry == "index.docker.io" || registry == "docker.io" { "https://index.docker.io/v1/" } else { registry };
    match docker_credential::get_credential(server) {
        Ok(docker_credential::DockerCredential::UsernamePassword(user, password)) => {
            RegistryAuth::Basic(user, password)
        }
        Ok(docker_credential::DockerCredential::IdentityToken(token)) => RegistryAuth::Bearer(token),
        Err(_) => RegistryAuth::Anonymous,
    }
}

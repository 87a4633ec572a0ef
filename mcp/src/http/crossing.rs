//! The answers to a 2025-11-25 session's server-to-client requests
//! (`elicitation/create`) across the replicas of a deployment. The call
//! that asks waits on the replica that runs it; its client may post the
//! answer through any replica. So each request id the session's worker
//! gives out is made the deployment's (`N` becomes `"REPLICA~N"`: two
//! replicas serving one session never hand out the same id), and an answer
//! to another replica's id is sealed (it may hold what the user typed) and
//! published to that replica, which hands it to its worker with the id it
//! gave. When the owner is gone, the answer is dropped: that call was lost
//! with its replica.

use std::sync::Arc;

use rmcp::model::{ClientJsonRpcMessage, NumberOrString, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::ServerSseMessage;

/// Between a replica id and a worker's own request id. Replica ids never
/// hold it ([`toolhost::replica::validate`]).
const SEPARATOR: char = '~';

/// The request ids of one replica's session workers, made the deployment's.
#[derive(Debug, Clone)]
pub(crate) struct RequestIds {
    /// This replica's id.
    pub(crate) replica: String,
}

/// Where an answer from a client goes.
pub(crate) enum Answer {
    /// To this replica's worker of the session, with the id it gave.
    Here(ClientJsonRpcMessage),
    /// To the replica `owner`, which asked.
    Elsewhere { owner: String, message: ClientJsonRpcMessage },
}

impl RequestIds {
    /// `message` with the id of a request of this replica's worker made the
    /// deployment's; anything else as it is.
    pub(crate) fn outgoing(&self, message: ServerJsonRpcMessage) -> ServerJsonRpcMessage {
        match message {
            ServerJsonRpcMessage::Request(mut request) => {
                if let NumberOrString::Number(n) = request.id {
                    request.id = NumberOrString::String(format!("{}{SEPARATOR}{n}", self.replica).into());
                }
                ServerJsonRpcMessage::Request(request)
            }
            other => other,
        }
    }

    /// [`RequestIds::outgoing`] of an event's message.
    pub(crate) fn outgoing_event(&self, mut event: ServerSseMessage) -> ServerSseMessage {
        if let Some(message) = event.message.take() {
            event.message = Some(Arc::new(self.outgoing(Arc::unwrap_or_clone(message))));
        }
        event
    }

    /// Where the client's `message` goes: an answer to a deployment id of
    /// this replica goes to its worker with the worker's own id, one of
    /// another replica's to that replica; anything else stays here as it
    /// is.
    pub(crate) fn incoming(&self, message: ClientJsonRpcMessage) -> Answer {
        let id = match &message {
            ClientJsonRpcMessage::Response(response) => Some(&response.id),
            ClientJsonRpcMessage::Error(error) => error.id.as_ref(),
            _ => None,
        };
        let Some((owner, n)) = id.and_then(split) else { return Answer::Here(message) };
        if owner != self.replica {
            return Answer::Elsewhere { owner, message };
        }
        Answer::Here(with_id(message, NumberOrString::Number(n)))
    }

    /// An answer another replica forwarded to this one: with the worker's
    /// own id, when the id is this replica's.
    pub(crate) fn forwarded(&self, message: ClientJsonRpcMessage) -> Option<ClientJsonRpcMessage> {
        match self.incoming(message) {
            Answer::Here(message) => Some(message),
            Answer::Elsewhere { .. } => None,
        }
    }
}

/// `REPLICA~N` as its parts.
fn split(id: &NumberOrString) -> Option<(String, i64)> {
    let NumberOrString::String(text) = id else { return None };
    let (owner, n) = text.rsplit_once(SEPARATOR)?;
    Some((owner.to_string(), n.parse().ok()?))
}

fn with_id(message: ClientJsonRpcMessage, id: NumberOrString) -> ClientJsonRpcMessage {
    match message {
        ClientJsonRpcMessage::Response(mut response) => {
            response.id = id;
            ClientJsonRpcMessage::Response(response)
        }
        ClientJsonRpcMessage::Error(mut error) => {
            error.id = Some(id);
            ClientJsonRpcMessage::Error(error)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn server_request(id: i64) -> ServerJsonRpcMessage {
        serde_json::from_value(json!({"jsonrpc": "2.0", "id": id, "method": "ping"})).unwrap()
    }

    fn client_answer(id: serde_json::Value) -> ClientJsonRpcMessage {
        serde_json::from_value(json!({"jsonrpc": "2.0", "id": id, "result": {}})).unwrap()
    }

    fn id_of(message: &ClientJsonRpcMessage) -> serde_json::Value {
        serde_json::to_value(message).unwrap()["id"].clone()
    }

    #[test]
    fn a_request_id_is_the_deployments_and_its_answer_finds_the_replica_that_asked() {
        let a = RequestIds { replica: "a".into() };
        let b = RequestIds { replica: "b".into() };
        let sent = serde_json::to_value(a.outgoing(server_request(3))).unwrap();
        assert_eq!(sent["id"], "a~3");
        assert_ne!(sent["id"], serde_json::to_value(b.outgoing(server_request(3))).unwrap()["id"]);

        let Answer::Here(here) = a.incoming(client_answer(json!("a~3"))) else { panic!("A asked") };
        assert_eq!(id_of(&here), json!(3), "A's worker gets the id it gave");
        let Answer::Elsewhere { owner, message } = b.incoming(client_answer(json!("a~3"))) else {
            panic!("B did not ask")
        };
        assert_eq!(owner, "a");
        assert_eq!(id_of(&a.forwarded(message).unwrap()), json!(3));
        assert!(b.forwarded(client_answer(json!("a~3"))).is_none(), "B never hands A's answer to its worker");
        // Ids the server never rewrote pass as they are.
        let Answer::Here(plain) = a.incoming(client_answer(json!(5))) else { panic!() };
        assert_eq!(id_of(&plain), json!(5));
        let Answer::Here(odd) = a.incoming(client_answer(json!("no-tilde"))) else { panic!() };
        assert_eq!(id_of(&odd), json!("no-tilde"));
    }
}

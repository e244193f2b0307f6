//! [`Operation`]: the SDK operation a request belongs to and the bucket or table it reads,
//! which the [`OperationInterceptor`] puts on each request and the client decides and keys
//! by; and the default list of operations that are hedged.

use std::borrow::Cow;
use std::sync::Arc;

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeSerializationInterceptorContextRef, BeforeTransmitInterceptorContextMut,
};
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::{ConfigBag, Storable, StoreReplace};

/// The reads hedged unless [`HedgedHttpClient::operations`](crate::HedgedHttpClient::operations)
/// replaces the list: S3's object and listing reads and DynamoDB's item reads.
pub const DEFAULT_OPERATIONS: [&str; 9] = [
    // S3
    "GetObject",
    "HeadObject",
    "GetObjectAttributes",
    "ListObjectsV2",
    // DynamoDB
    "GetItem",
    "BatchGetItem",
    "Query",
    "Scan",
    "TransactGetItems",
];

/// The operation a request belongs to, as the SDK names it (`GetObject`, `GetItem`), and
/// the one bucket or table it reads: a request extension put by [`OperationInterceptor`]
/// just before the request is sent.
#[derive(Clone, Debug)]
pub struct Operation {
    metadata: Metadata,
    /// `None` for an operation without one resource; an `Arc`, so a call's key shares it.
    resource: Option<Arc<str>>,
}

impl Operation {
    /// The operation of `service` (`S3`, `DynamoDB`) named `name`, reading `resource` (a
    /// bucket or a table; `""` for none).
    pub fn new(
        service: impl Into<Cow<'static, str>>,
        name: impl Into<Cow<'static, str>>,
        resource: &str,
    ) -> Self {
        Operation {
            metadata: Metadata::new(name, service),
            resource: (!resource.is_empty()).then(|| Arc::from(resource)),
        }
    }

    /// The service, as the SDK names it: `S3`, `DynamoDB`.
    pub fn service(&self) -> &str {
        self.metadata.service()
    }

    /// The operation's name: `GetObject`, `GetItem`.
    pub fn name(&self) -> &str {
        self.metadata.name()
    }

    /// The one bucket (S3) or table (DynamoDB) the request reads, as the caller named it
    /// in the operation's input (`my-bucket`, `orders`, or an ARN given in their place);
    /// see [which resources are read](OperationInterceptor#which-resources-are-read).
    /// `""` for an operation without one (`BatchGetItem` and `TransactGetItems` name
    /// several tables, `ListBuckets` none) and for one whose input is not read.
    pub fn resource(&self) -> &str {
        self.resource.as_deref().unwrap_or("")
    }

    /// The key a [`HedgedHttpClient`](crate::HedgedHttpClient) gives this operation's
    /// calls by default, `(name, resource)`: `("GetObject", "my-bucket")`,
    /// `("GetItem", "orders")`, `("BatchGetItem", "")`. Calls with one key have latencies
    /// alike, so a policy with [`adaptive_keys`](hedging::PolicyBuilder::adaptive_keys)
    /// learns a delay for each: `policy.delay_for(&("GetObject", "my-bucket"))`.
    pub fn key(&self) -> (&str, &str) {
        (self.name(), self.resource())
    }
}

/// The operation as the interceptor read it before serialization, kept in the config bag
/// for each attempt's request to carry.
#[derive(Debug)]
struct Named(Operation);

impl Storable for Named {
    type Storer = StoreReplace<Self>;
}

/// Puts each request's [`Operation`] in its extensions (`modify_before_transmit`), for the
/// [`HedgedHttpClient`](crate::HedgedHttpClient) to decide and key by. Installed with the
/// client by [`HedgeSdkConfig::hedged`](crate::HedgeSdkConfig); by hand, from
/// [`HedgedHttpClient::interceptor`](crate::HedgedHttpClient::interceptor).
///
/// # Which resources are read
///
/// The resource is read from the operation's input before it is serialized
/// (`read_before_serialization`), through the SDK's own input types: the value the caller
/// set, with no request parsed. With the feature `s3`, the bucket of S3's `GetObject`,
/// `HeadObject`, `GetObjectAttributes`, `ListObjectsV2`, `ListObjects`,
/// `ListObjectVersions`, `GetObjectTagging`, `GetObjectAcl` and `HeadBucket`; with
/// `dynamodb`, the table of DynamoDB's `GetItem`, `Query`, `Scan` and `DescribeTable`.
/// Any other operation, or one of these without its feature, has the resource `""`.
#[derive(Clone, Copy, Debug, Default)]
pub struct OperationInterceptor;

impl Intercept for OperationInterceptor {
    fn name(&self) -> &'static str {
        "hedging-aws operation name"
    }

    fn read_before_serialization(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(metadata) = cfg.load::<Metadata>() else {
            return Ok(());
        };
        let resource = crate::resource::of(metadata, context.input());
        let operation = Operation {
            metadata: metadata.clone(),
            resource: resource.filter(|r| !r.is_empty()).map(Arc::from),
        };
        cfg.interceptor_state().store_put(Named(operation));
        Ok(())
    }

    fn modify_before_transmit(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(Named(operation)) = cfg.load::<Named>() {
            context.request_mut().add_extension(operation.clone());
        }
        Ok(())
    }
}

/// The operations a client hedges, by name.
#[derive(Clone, Debug)]
pub(crate) struct Operations(Arc<[Cow<'static, str>]>);

impl Operations {
    pub(crate) fn new<I>(names: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<Cow<'static, str>>,
    {
        Operations(names.into_iter().map(Into::into).collect())
    }

    pub(crate) fn hedges(&self, operation: &Operation) -> bool {
        self.0.iter().any(|name| name == operation.name())
    }

    pub(crate) fn as_slice(&self) -> &[Cow<'static, str>] {
        &self.0
    }
}

impl Default for Operations {
    fn default() -> Self {
        Operations::new(DEFAULT_OPERATIONS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_the_operation_and_what_it_reads() {
        let get = Operation::new("DynamoDB", "GetItem", "orders");
        assert_eq!(get.key(), ("GetItem", "orders"));
        assert_ne!(
            get.key(),
            Operation::new("DynamoDB", "GetItem", "users").key()
        );
        assert_ne!(
            get.key(),
            Operation::new("DynamoDB", "Query", "orders").key()
        );
        let batch = Operation::new("DynamoDB", "BatchGetItem", "");
        assert_eq!(batch.key(), ("BatchGetItem", ""));
    }

    #[test]
    fn the_default_list_hedges_reads_by_name_not_by_method() {
        let operations = Operations::default();
        for read in [
            "GetObject",
            "HeadObject",
            "ListObjectsV2",
            "GetItem",
            "Query",
        ] {
            assert!(operations.hedges(&Operation::new("", read, "")), "{read}");
        }
        for write in ["PutObject", "DeleteObject", "PutItem", "UpdateItem"] {
            assert!(
                !operations.hedges(&Operation::new("", write, "")),
                "{write}"
            );
        }
        let only_scans = Operations::new(["Scan"]);
        assert!(only_scans.hedges(&Operation::new("DynamoDB", "Scan", "")));
        assert!(!only_scans.hedges(&Operation::new("DynamoDB", "Query", "")));
    }
}

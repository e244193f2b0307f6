//! The bucket or table an operation's input names, read through the SDK's input types
//! (features `s3`, `dynamodb`): see [`OperationInterceptor`](crate::OperationInterceptor).

use aws_smithy_runtime_api::client::interceptors::context::Input;
use aws_smithy_runtime_api::client::orchestrator::Metadata;

/// For each operation of a service: its name, its input type and the getter of its one
/// resource. An input of another type (another SDK's operation of the same name) is `None`.
#[cfg(any(feature = "s3", feature = "dynamodb"))]
macro_rules! resources {
    ($input:expr, $name:expr, $($operation:literal => $type:ty, $getter:ident;)*) => {
        match $name {
            $($operation => $input.downcast_ref::<$type>().and_then(|input| input.$getter()),)*
            _ => None,
        }
    };
}

/// The one bucket or table `input`, of the operation `metadata` names, reads, if this
/// crate reads it (an operation of a service whose feature is off: `None`).
#[cfg_attr(
    not(any(feature = "s3", feature = "dynamodb")),
    allow(unused_variables)
)]
pub(crate) fn of<'a>(metadata: &Metadata, input: &'a Input) -> Option<&'a str> {
    let name = metadata.name();
    match metadata.service() {
        #[cfg(feature = "s3")]
        "S3" => {
            use aws_sdk_s3::operation::*;
            resources!(input, name,
                "GetObject" => get_object::GetObjectInput, bucket;
                "HeadObject" => head_object::HeadObjectInput, bucket;
                "GetObjectAttributes" => get_object_attributes::GetObjectAttributesInput, bucket;
                "ListObjectsV2" => list_objects_v2::ListObjectsV2Input, bucket;
                "ListObjects" => list_objects::ListObjectsInput, bucket;
                "ListObjectVersions" => list_object_versions::ListObjectVersionsInput, bucket;
                "GetObjectTagging" => get_object_tagging::GetObjectTaggingInput, bucket;
                "GetObjectAcl" => get_object_acl::GetObjectAclInput, bucket;
                "HeadBucket" => head_bucket::HeadBucketInput, bucket;
            )
        }
        #[cfg(feature = "dynamodb")]
        "DynamoDB" => {
            use aws_sdk_dynamodb::operation::*;
            resources!(input, name,
                "GetItem" => get_item::GetItemInput, table_name;
                "Query" => query::QueryInput, table_name;
                "Scan" => scan::ScanInput, table_name;
                "DescribeTable" => describe_table::DescribeTableInput, table_name;
            )
        }
        _ => None,
    }
}

//! [`HedgeSdkConfig`]: one call that installs a [`HedgedHttpClient`] and its interceptor
//! on an SDK client's config builder (features `s3`, `dynamodb`).

use std::fmt;

use hedging::timer::Timer;

use crate::HedgedHttpClient;

/// Installs a [`HedgedHttpClient`] on an SDK config builder, with the
/// [`OperationInterceptor`](crate::OperationInterceptor) it decides by, in one call:
///
/// ```
/// # #[cfg(feature = "s3")]
/// # fn s3(sdk_config: &aws_sdk_s3::config::Builder, client: hedging_aws::HedgedHttpClient<hedging_aws::hedging::timer::ManualTimer>) {
/// use hedging_aws::HedgeSdkConfig;
///
/// let config = sdk_config.clone().hedged(client).build();
/// # }
/// ```
///
/// Implemented for `aws_sdk_s3::config::Builder` (feature `s3`) and
/// `aws_sdk_dynamodb::config::Builder` (feature `dynamodb`). For any other SDK client, the
/// same two calls by hand:
/// `builder.http_client(client.clone()).interceptor(client.interceptor())`.
pub trait HedgeSdkConfig: Sized {
    /// This builder, its HTTP client `client` and the interceptor `client` reads.
    fn hedged<T>(self, client: HedgedHttpClient<T>) -> Self
    where
        T: Timer + fmt::Debug + Send + Sync + 'static,
        T::Sleep: Send;
}

macro_rules! hedge_sdk_config {
    ($feature:literal, $builder:ty) => {
        #[cfg(feature = $feature)]
        #[cfg_attr(docsrs, doc(cfg(feature = $feature)))]
        impl HedgeSdkConfig for $builder {
            fn hedged<T>(self, client: HedgedHttpClient<T>) -> Self
            where
                T: Timer + fmt::Debug + Send + Sync + 'static,
                T::Sleep: Send,
            {
                let interceptor = client.interceptor();
                self.http_client(client).interceptor(interceptor)
            }
        }
    };
}

hedge_sdk_config!("s3", aws_sdk_s3::config::Builder);
hedge_sdk_config!("dynamodb", aws_sdk_dynamodb::config::Builder);

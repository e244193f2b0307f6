//! [`HedgedService`]: the service a [`HedgeLayer`](crate::HedgeLayer) puts over the
//! operator's: `stat` hedged here, `read` by its [`HedgedReader`], every other operation
//! forwarded and counted out of scope.

use std::fmt;
use std::sync::Arc;

use hedging::timer::Timer;
use hedging::{Hedgeable, Policy};
use opendal::raw::{
    oio, OpCompose, OpCopy, OpCreateDir, OpList, OpPresign, OpRead, OpRename, OpRestore, OpStat,
    OpWrite, RpCreateDir, RpPresign, RpRename, RpRestore, RpStat, Service, ServiceInfo, Servicer,
};
use opendal::{Capability, OperationContext, Result};

use crate::key::{Call, CallKey};
use crate::reader::HedgedReader;
use crate::settings::{verdict, Settings};

/// The operator's service with its `stat` and `read` hedged; made by
/// [`HedgeLayer`](crate::HedgeLayer), named here so it can be named, never built by hand.
pub struct HedgedService<T, K> {
    inner: Servicer,
    settings: Arc<Settings<T, K>>,
}

impl<T, K> HedgedService<T, K> {
    pub(crate) fn new(inner: Servicer, settings: Arc<Settings<T, K>>) -> Self {
        HedgedService { inner, settings }
    }

    /// The policy its calls are hedged by.
    pub fn policy(&self) -> &Policy<T> {
        &self.settings.policy
    }
}

/// Whatever the key is: a closure need not be `Debug`.
impl<T: fmt::Debug, K> fmt::Debug for HedgedService<T, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HedgedService")
            .field("inner", &self.inner)
            .field("policy", &self.settings.policy)
            .finish_non_exhaustive()
    }
}

impl<T, K> Service for HedgedService<T, K>
where
    T: Timer + fmt::Debug + Send + Sync + 'static,
    T::Sleep: Send,
    K: CallKey,
{
    type Reader = HedgedReader<T, K>;
    type Writer = oio::Writer;
    type Lister = oio::Lister;
    type Deleter = oio::Deleter;
    type Copier = oio::Copier;
    type Composer = oio::Composer;

    fn info(&self) -> ServiceInfo {
        self.inner.info()
    }

    fn capability(&self) -> Capability {
        self.inner.capability()
    }

    async fn create_dir(
        &self,
        ctx: &OperationContext,
        path: &str,
        args: OpCreateDir,
    ) -> Result<RpCreateDir> {
        self.settings.policy.count_out_of_scope();
        self.inner.create_dir(ctx, path, args).await
    }

    async fn stat(&self, ctx: &OperationContext, path: &str, args: OpStat) -> Result<RpStat> {
        let settings = &*self.settings;
        // Hashed only if the call makes its race, on a policy with keys.
        let key = settings.key.key(&Call::stat(path));
        let inner = &self.inner;
        (|| inner.stat(ctx, path, args.clone()))
            .hedged(&settings.policy)
            .classify(verdict)
            .key(&key)
            .await
    }

    fn read(&self, ctx: &OperationContext, path: &str, args: OpRead) -> Result<Self::Reader> {
        // No request yet: each range the reader opens is a call of its own.
        let reader = self.inner.read(ctx, path, args.clone())?;
        Ok(HedgedReader::new(
            reader,
            Arc::clone(&self.inner),
            ctx.clone(),
            path,
            args,
            Arc::clone(&self.settings),
        ))
    }

    fn write(&self, ctx: &OperationContext, path: &str, args: OpWrite) -> Result<oio::Writer> {
        self.settings.policy.count_out_of_scope();
        self.inner.write(ctx, path, args)
    }

    fn delete(&self, ctx: &OperationContext) -> Result<oio::Deleter> {
        self.settings.policy.count_out_of_scope();
        self.inner.delete(ctx)
    }

    fn list(&self, ctx: &OperationContext, path: &str, args: OpList) -> Result<oio::Lister> {
        self.settings.policy.count_out_of_scope();
        self.inner.list(ctx, path, args)
    }

    fn copy(
        &self,
        ctx: &OperationContext,
        from: &str,
        to: &str,
        args: OpCopy,
    ) -> Result<oio::Copier> {
        self.settings.policy.count_out_of_scope();
        self.inner.copy(ctx, from, to, args)
    }

    fn compose(&self, ctx: &OperationContext, to: &str, args: OpCompose) -> Result<oio::Composer> {
        self.settings.policy.count_out_of_scope();
        self.inner.compose(ctx, to, args)
    }

    async fn rename(
        &self,
        ctx: &OperationContext,
        from: &str,
        to: &str,
        args: OpRename,
    ) -> Result<RpRename> {
        self.settings.policy.count_out_of_scope();
        self.inner.rename(ctx, from, to, args).await
    }

    async fn restore(
        &self,
        ctx: &OperationContext,
        path: &str,
        args: OpRestore,
    ) -> Result<RpRestore> {
        self.settings.policy.count_out_of_scope();
        self.inner.restore(ctx, path, args).await
    }

    /// Signs a request and sends none: neither a call nor out of scope.
    async fn presign(
        &self,
        ctx: &OperationContext,
        path: &str,
        args: OpPresign,
    ) -> Result<RpPresign> {
        self.inner.presign(ctx, path, args).await
    }
}

//! The server: its shared state, the router, and the process's life (bind, load, serve, shut
//! down). The listener is bound before the model loads, so `/health` answers 503 while it loads and
//! 200 once requests can run: a load balancer's readiness probe.
//!
//! Shutdown on SIGINT or SIGTERM: stop accepting connections, refuse new requests on open ones
//! (503), let in-flight requests finish for the grace period, then abort the rest (their streams end
//! with an error event) and exit 0.
use super::engine_thread::{self, Cmd, LoadSpec, Loaded};
use super::error::ApiError;
use super::metrics::Metrics;
use super::routes;
use super::types::{now, Model, ModelList};
use crate::error::{Error, Result};
use crate::serve::ServeOptions;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use axum::Router;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::Duration;

/// The `wgllm serve` flags that shape the HTTP side.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub host: String,
    pub port: u16,
    pub api_key: Option<String>,
    pub served_model_name: String,
    /// requests (sequences) waiting beyond the engine's running batch before 429
    pub max_queue: usize,
    /// the engine's `max_seqs`
    pub max_seqs: usize,
    pub max_body_bytes: usize,
    pub shutdown_grace: Duration,
}

pub struct AppState {
    pub cfg: ServerConfig,
    loaded: OnceLock<Arc<Loaded>>,
    /// the engine thread's command channel (std's Sender is Sync; the Mutex keeps older
    /// toolchains' !Sync Sender out of the question)
    cmd: Mutex<mpsc::Sender<Cmd>>,
    pub metrics: Arc<Metrics>,
    pub next_id: AtomicU64,
    /// sequences admitted and not yet done (the bounded queue)
    pub outstanding: AtomicUsize,
    pub shutting_down: AtomicBool,
    created: u64,
}

impl AppState {
    pub fn loaded(&self) -> std::result::Result<Arc<Loaded>, ApiError> {
        self.loaded
            .get()
            .cloned()
            .ok_or_else(|| ApiError::unavailable("the model is still loading; poll /health"))
    }

    pub fn send(&self, c: Cmd) -> std::result::Result<(), ApiError> {
        let tx = self.cmd.lock().unwrap_or_else(|p| p.into_inner());
        tx.send(c).map_err(|_| ApiError::unavailable("the engine has stopped"))
    }

    /// 401 unless the request carries `Authorization: Bearer <--api-key>` (when one is set).
    pub fn auth(&self, h: &HeaderMap) -> std::result::Result<(), ApiError> {
        let Some(key) = &self.cfg.api_key else { return Ok(()) };
        let given = h.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        match given.and_then(|v| v.strip_prefix("Bearer ")) {
            Some(k) if k.trim() == key => Ok(()),
            _ => Err(ApiError::unauthorized()),
        }
    }

    pub fn check_model(&self, m: &str) -> std::result::Result<(), ApiError> {
        if m == self.cfg.served_model_name {
            Ok(())
        } else {
            Err(ApiError::model_not_found(m, &self.cfg.served_model_name))
        }
    }

    /// The body, refused with 413 past `--max-body-bytes`.
    pub async fn read_body(&self, body: Body) -> std::result::Result<axum::body::Bytes, ApiError> {
        axum::body::to_bytes(body, self.cfg.max_body_bytes)
            .await
            .map_err(|_| ApiError::too_large(self.cfg.max_body_bytes))
    }
}

async fn health(State(st): State<Arc<AppState>>) -> Response {
    if st.shutting_down.load(Ordering::SeqCst) {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n").into_response();
    }
    match st.loaded.get() {
        Some(_) => (StatusCode::OK, "ok\n").into_response(),
        None => (StatusCode::SERVICE_UNAVAILABLE, "loading\n").into_response(),
    }
}

async fn metrics(State(st): State<Arc<AppState>>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        st.metrics.render(),
    )
        .into_response()
}

fn model_entry(st: &AppState) -> Model {
    Model {
        id: st.cfg.served_model_name.clone(),
        object: "model",
        created: st.created,
        owned_by: "wgllm",
        max_model_len: st.loaded.get().map_or(0, |l| l.max_ctx),
    }
}

async fn models(State(st): State<Arc<AppState>>, h: HeaderMap) -> Response {
    if let Err(e) = st.auth(&h) {
        return e.into_response();
    }
    Json(ModelList {
        object: "list",
        data: vec![model_entry(&st)],
    })
    .into_response()
}

async fn model(State(st): State<Arc<AppState>>, h: HeaderMap, Path(id): Path<String>) -> Response {
    if let Err(e) = st.auth(&h).and_then(|_| st.check_model(&id)) {
        return e.into_response();
    }
    Json(model_entry(&st)).into_response()
}

async fn fallback(uri: Uri) -> Response {
    ApiError::not_found(uri.path()).into_response()
}

/// Counts the /v1 endpoints' responses by status for /metrics.
async fn count_status(State(st): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let r = next.run(req).await;
    st.metrics.request(r.status().as_u16());
    r
}

pub fn router(st: Arc<AppState>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(routes::chat))
        .route("/v1/completions", post(routes::completions))
        .route("/v1/models", get(models))
        .route("/v1/models/{id}", get(model))
        .layer(middleware::from_fn_with_state(st.clone(), count_status))
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .fallback(fallback)
        // the handlers read the body themselves, so the limit's refusal is OpenAI-shaped
        .layer(DefaultBodyLimit::disable())
        .with_state(st)
}

/// Resolves on SIGINT or SIGTERM.
async fn signal() {
    let int = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("installing the SIGTERM handler");
        tokio::select! {
            _ = int => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = int.await;
}

/// Runs the server until a signal (Ok) or a failure to bind or load (Err).
pub fn run(cfg: ServerConfig, spec: LoadSpec, opts: ServeOptions) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("wgllm-http")
        .build()
        .map_err(|e| Error::Other(format!("starting the async runtime: {e}")))?;
    rt.block_on(serve(cfg, spec, opts))
}

async fn serve(cfg: ServerConfig, spec: LoadSpec, opts: ServeOptions) -> Result<()> {
    let addr = format!("{}:{}", cfg.host, cfg.port);
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .map_err(|e| Error::Other(format!("--host/--port: cannot listen on {addr}: {e}")))?;
    let local = listener.local_addr().map_err(|e| Error::Other(e.to_string()))?;
    // tests and scripts read the port from this line (with --port 0 the OS picks it)
    eprintln!("wgllm serve: listening on http://{local}");
    let metrics = Arc::new(Metrics::default());
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let grace = cfg.shutdown_grace;
    let (cmd, engine) = engine_thread::spawn(spec, opts, metrics.clone(), ready_tx);
    let st = Arc::new(AppState {
        cfg,
        loaded: OnceLock::new(),
        cmd: Mutex::new(cmd),
        metrics,
        next_id: AtomicU64::new(1),
        outstanding: AtomicUsize::new(0),
        shutting_down: AtomicBool::new(false),
        created: now(),
    });
    let (down_tx, down_rx) = tokio::sync::watch::channel(false);
    let load_error = Arc::new(Mutex::new(None));
    {
        let (st, down_tx, load_error) = (st.clone(), down_tx.clone(), load_error.clone());
        tokio::spawn(async move {
            match ready_rx.await {
                Ok(Ok(l)) => {
                    eprintln!(
                        "wgllm serve: ready: {} ({}, context {}) on {}",
                        st.cfg.served_model_name, l.model_type, l.max_ctx, l.device
                    );
                    let _ = st.loaded.set(Arc::new(l));
                }
                Ok(Err(e)) => {
                    *load_error.lock().unwrap() = Some(e);
                    let _ = down_tx.send(true);
                }
                Err(_) => {
                    *load_error.lock().unwrap() = Some("the engine thread ended while loading".into());
                    let _ = down_tx.send(true);
                }
            }
        });
    }
    tokio::spawn(async move {
        signal().await;
        eprintln!("wgllm serve: shutting down (grace {grace:?})");
        let _ = down_tx.send(true);
    });
    let mut rx1 = down_rx.clone();
    let app = router(st.clone());
    let mut server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = rx1.wait_for(|d| *d).await;
            })
            .await
    });
    let mut rx2 = down_rx.clone();
    let early = tokio::select! {
        r = &mut server => Some(r),
        _ = rx2.wait_for(|d| *d) => None,
    };
    st.shutting_down.store(true, Ordering::SeqCst);
    if early.is_none() && tokio::time::timeout(grace, &mut server).await.is_err() {
        eprintln!("wgllm serve: grace period over: aborting the requests still running");
        let _ = st.send(Cmd::AbortAll);
        let _ = tokio::time::timeout(Duration::from_secs(5), &mut server).await;
    }
    let _ = st.send(Cmd::Stop);
    // the engine thread may be mid-step; it stops after it
    let _ = tokio::task::spawn_blocking(move || engine.join()).await;
    if let Some(e) = load_error.lock().unwrap().take() {
        return Err(Error::Other(format!("loading the model: {e}")));
    }
    if let Some(Ok(Err(e))) = early {
        return Err(Error::Other(format!("the HTTP server failed: {e}")));
    }
    eprintln!("wgllm serve: stopped");
    Ok(())
}

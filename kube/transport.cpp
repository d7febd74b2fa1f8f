#include "kube/transport.hpp"

#include <boost/asio/ssl.hpp>
#include <cpprest/http_client.h>
#include <cpprest/producerconsumerstream.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <utility>

#include "kube/errors.hpp"
#include "kube/log.hpp"
#include "kube/tls.hpp"
#include "kube/token_source.hpp"

namespace trainbench::kube {

namespace http = web::http;
using SteadyTime = std::chrono::steady_clock::time_point;

namespace {

constexpr std::size_t kMaxLine = 16u << 20;
constexpr std::chrono::seconds kMaxRetryAfter{30};
constexpr std::chrono::seconds kCancelGrace{10};

std::string server_host(const std::string& server) {
  std::string rest = server.substr(server.find("://") == std::string::npos ? 0 : server.find("://") + 3);
  if (!rest.empty() && rest.front() == '[') {
    const auto close = rest.find(']');
    return close == std::string::npos ? rest : rest.substr(0, close + 1);
  }
  return rest.substr(0, rest.find_first_of(":/"));
}

long long millis(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// Completion of a pplx task, waitable with a deadline and a StopToken.
struct Completion {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  bool stopped = false;
};

enum class Waited { kDone, kDeadline, kStopped };

template <typename T>
Waited wait_task(const pplx::task<T>& task, SteadyTime deadline, const StopToken& stop,
                 pplx::cancellation_token_source& cts) {
  auto c = std::make_shared<Completion>();
  task.then([c](pplx::task<T> t) {
    try {
      t.wait();  // marks a failure as observed (pplx reports unobserved ones)
    } catch (...) {
    }
    {
      std::lock_guard<std::mutex> lock(c->mutex);
      c->done = true;
    }
    c->cv.notify_all();
  });
  StopCallback on_stop(stop, [c] {
    {
      std::lock_guard<std::mutex> lock(c->mutex);
      c->stopped = true;
    }
    c->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(c->mutex);
  c->cv.wait_until(lock, deadline, [&] { return c->done || c->stopped; });
  if (c->done) return Waited::kDone;
  const Waited why = c->stopped ? Waited::kStopped : Waited::kDeadline;
  lock.unlock();
  cts.cancel();  // closes the connection; the task then ends promptly
  lock.lock();
  c->cv.wait_for(lock, kCancelGrace, [&] { return c->done; });
  return why;
}

// Turns whatever cpprestsdk threw into a TransportError.
[[noreturn]] void throw_transport(std::exception_ptr error, const std::string& what, const TlsDiagnostics* diag,
                                  bool canceled) {
  using Kind = TransportError::Kind;
  if (canceled) throw TransportError(Kind::kCanceled, what + ": canceled");
  try {
    std::rethrow_exception(error);
  } catch (const TransportError&) {
    throw;
  } catch (const KubeError&) {
    throw;
  } catch (const http::http_exception& e) {
    const std::string msg = e.what();
    const auto ec = e.error_code();
    if (ec == std::errc::timed_out || ec.value() == static_cast<int>(std::errc::timed_out)) {
      throw TransportError(Kind::kTimeout, what + ": timed out (" + msg + ")");
    }
    if (ec.value() == static_cast<int>(std::errc::operation_canceled)) {
      throw TransportError(Kind::kCanceled, what + ": canceled");
    }
    if (msg.find("SSL") != std::string::npos || msg.find("handshake") != std::string::npos) {
      std::string detail = diag ? diag->last() : std::string();
      throw TransportError(Kind::kTls, what + ": TLS handshake failed" + (detail.empty() ? "" : ": " + detail));
    }
    throw TransportError(Kind::kConnect, what + ": " + msg);
  } catch (const pplx::task_canceled&) {
    throw TransportError(Kind::kCanceled, what + ": canceled");
  } catch (const std::exception& e) {
    throw TransportError(Kind::kConnect, what + ": " + e.what());
  } catch (...) {
    throw TransportError(Kind::kConnect, what + ": unknown failure");
  }
}

std::string header(const http::http_headers& headers, const char* name) {
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

struct Transport::Impl {
  Impl(ClientConfig c, std::shared_ptr<Clock> clock)
      : cfg(std::move(c)),
        tls(std::make_shared<TlsSetup>(cfg.tls, server_host(cfg.server))),
        tokens(cfg.token, cfg.token_file, cfg.token_refresh, clock),
        limiter(cfg.qps, cfg.burst, clock) {}

  ClientConfig cfg;
  std::shared_ptr<const TlsSetup> tls;
  TokenSource tokens;
  TokenBucket limiter;
  std::mutex clients_mutex;
  std::map<long long, std::shared_ptr<http::client::http_client>> clients;  // by timeout (ms)

  std::shared_ptr<http::client::http_client> client_for(std::chrono::milliseconds timeout) {
    std::lock_guard<std::mutex> lock(clients_mutex);
    auto it = clients.find(timeout.count());
    if (it != clients.end()) return it->second;
    http::client::http_client_config hc;
    hc.set_timeout(timeout);  // cpprestsdk: inactivity timeout of each step
    hc.set_validate_certificates(true);
    hc.set_max_redirects(0);  // a redirect would carry the Authorization header elsewhere
    auto setup = tls;
    hc.set_ssl_context_callback([setup](boost::asio::ssl::context& ctx) { setup->apply(ctx.native_handle()); });
    auto client = std::make_shared<http::client::http_client>(web::uri(cfg.server), hc);
    if (clients.size() < 16) clients.emplace(timeout.count(), client);
    return client;
  }

  /// Forgets the clients and with them their pools of kept-alive connections (in-flight
  /// requests keep theirs): the next request opens a new connection.
  void forget_connections() {
    std::lock_guard<std::mutex> lock(clients_mutex);
    clients.clear();
  }

  std::string describe(const HttpRequest& r) const { return r.method + " " + cfg.server + r.path; }

  http::http_request build(const HttpRequest& r, const std::string& token) const {
    http::http_request req(r.method);
    req.set_request_uri(web::uri(r.path + (r.query.empty() ? "" : "?" + r.query)));
    req.headers().add("Accept", "application/json");
    req.headers().add("User-Agent", cfg.user_agent);
    if (!token.empty()) req.headers().add("Authorization", "Bearer " + token);
    if (!r.body.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH") {
      req.set_body(std::string(r.body), r.content_type.empty() ? std::string("application/json") : r.content_type);
    }
    return req;
  }

  void log(LogLevel level, const std::string& line) const {
    if (cfg.log) cfg.log(level, line);
  }

  void log_exchange(const HttpRequest& r, int status, const std::string& body, SteadyTime start,
                    const std::string& note) const {
    if (cfg.observe) {
      RequestRecord rec;
      rec.info = classify_request(r.method, r.path, r.query);
      rec.code = status;
      rec.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      cfg.observe(rec);
    }
    if (!cfg.log) return;
    std::string line = "kube: " + r.method + " " + r.path + (r.query.empty() ? "" : "?" + r.query) + " -> ";
    line += status ? std::to_string(status) : std::string("no answer");
    line += " (" + std::to_string(millis(std::chrono::steady_clock::now() - start)) + " ms)";
    if (!note.empty()) line += " " + note;
    log(LogLevel::kDebug, line);
    std::string trace = "kube:   request headers: Authorization: " + redact_header("Authorization", "x") +
                        ", User-Agent: " + cfg.user_agent;
    if (!r.content_type.empty()) trace += ", Content-Type: " + r.content_type;
    log(LogLevel::kTrace, trace);
    if (!r.body.empty()) log(LogLevel::kTrace, "kube:   request body: " + redact_body(r.path, r.body));
    if (!body.empty()) log(LogLevel::kTrace, "kube:   response body: " + redact_body(r.path, body));
  }

  std::chrono::milliseconds timeout_of(const HttpRequest& r) const {
    return r.timeout.count() > 0 ? r.timeout : cfg.timeout;
  }

  void rate_limit(const HttpRequest& r) {
    if (!limiter.acquire(r.stop)) throw TransportError(TransportError::Kind::kCanceled, describe(r) + ": canceled");
  }

  HttpResponse exchange(const HttpRequest& r) {
    const auto timeout = timeout_of(r);
    const auto start = std::chrono::steady_clock::now();
    pplx::cancellation_token_source cts;
    pplx::task<HttpResponse> task;
    try {
      auto client = client_for(timeout);
      task = client->request(build(r, tokens.token()), cts.get_token()).then([](http::http_response resp) {
        auto out = std::make_shared<HttpResponse>();
        out->status = resp.status_code();
        out->content_type = resp.headers().content_type();
        out->retry_after = header(resp.headers(), "Retry-After");
        return resp.extract_utf8string(true).then([out](std::string body) {
          out->body = std::move(body);
          return std::move(*out);
        });
      });
    } catch (const KubeError&) {
      throw;
    } catch (...) {
      throw_transport(std::current_exception(), describe(r), tls->diagnostics().get(), false);
    }
    const Waited how = wait_task(task, start + timeout, r.stop, cts);
    if (how == Waited::kDeadline) {
      log_exchange(r, 0, {}, start, "timeout");
      throw TransportError(TransportError::Kind::kTimeout,
                           describe(r) + ": no answer within " + std::to_string(timeout.count()) + " ms");
    }
    try {
      if (how == Waited::kStopped) throw pplx::task_canceled();
      HttpResponse resp = task.get();
      log_exchange(r, resp.status, resp.body, start, {});
      return resp;
    } catch (...) {
      log_exchange(r, 0, {}, start, "failed");
      throw_transport(std::current_exception(), describe(r), tls->diagnostics().get(),
                      how == Waited::kStopped || r.stop.stop_requested());
    }
  }
};

Transport::Transport(ClientConfig config, std::shared_ptr<Clock> clock) {
  validate_config(config);
  impl_ = std::make_unique<Impl>(std::move(config), std::move(clock));
}

Transport::~Transport() = default;

const ClientConfig& Transport::config() const { return impl_->cfg; }

TokenBucket& Transport::rate_limiter() { return impl_->limiter; }

namespace {

/// cpprestsdk could not send the request at all: the keep-alive connection it picked had been
/// closed by the server (seen after an API-server restart). The server cannot have acted on a
/// request whose headers or body it never got, so sending it again on a new connection is safe
/// for any verb, as Go's net/http does; cpprestsdk re-sends on its own only when reading the
/// answer fails.
bool never_sent(const TransportError& e) {
  if (e.kind() != TransportError::Kind::kConnect) return false;
  const std::string what = e.what();
  return what.find("Failed to write request body") != std::string::npos ||
         what.find("Failed to write request headers") != std::string::npos;
}

}  // namespace

HttpResponse Transport::send(const HttpRequest& request) {
  bool refreshed_token = false;
  bool resent = false;
  int retries_429 = 0;
  for (;;) {
    impl_->rate_limit(request);
    HttpResponse resp;
    try {
      resp = impl_->exchange(request);
    } catch (const TransportError& e) {
      if (resent || !never_sent(e)) throw;
      resent = true;  // once: a second failure is the caller's
      // Every connection kept to that server may be as dead (it restarted): a new pool.
      impl_->forget_connections();
      impl_->log(LogLevel::kDebug, "kube: " + request.method + " " + request.path + ": " + e.what() +
                                       "; sending it again on a new connection");
      continue;
    }
    if (resp.status == 401 && impl_->tokens.from_file() && !refreshed_token) {
      // A projected token may have rotated since it was last read.
      impl_->tokens.invalidate();
      refreshed_token = true;
      continue;
    }
    // As client-go: a 429, or a 5xx that carries Retry-After (the server says when to come
    // back), is retried after that delay; other 5xx go to the caller, whose backoff applies.
    const bool come_back =
        resp.status == 429 || (resp.status >= 500 && resp.status <= 599 && !resp.retry_after.empty());
    if (come_back && retries_429 < impl_->cfg.max_retries_on_429) {
      ++retries_429;
      std::chrono::seconds wait{1};
      const std::string& ra = resp.retry_after;
      if (!ra.empty() && ra.size() < 6 && std::all_of(ra.begin(), ra.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
        wait = std::chrono::seconds(std::stol(ra));
      }
      wait = std::clamp(wait, std::chrono::seconds(1), kMaxRetryAfter);
      impl_->log(LogLevel::kDebug, "kube: " + request.method + " " + request.path + ": " + std::to_string(resp.status) +
                                       ", retrying in " + std::to_string(wait.count()) + " s");
      if (request.stop.wait_for(wait)) {
        throw TransportError(TransportError::Kind::kCanceled, impl_->describe(request) + ": canceled");
      }
      continue;
    }
    return resp;
  }
}

// ---------------------------------------------------------------------------------------------

// How the body of a stream ended: set (then `body` closed) when cpprestsdk completes the response.
struct StreamEnd {
  std::mutex mutex;
  std::condition_variable cv;
  std::exception_ptr error;
  bool done = false;  // the completion handler has closed `body` and returned from close()
};

struct HttpStream::Impl {
  pplx::cancellation_token_source cts;
  http::http_response response;
  // The body is written here. It is our buffer, not cpprestsdk's default one, so that a failure
  // does not discard bytes already received: cpprestsdk never closes a caller's buffer, we close
  // it ourselves when the response completes and keep the failure in `end`.
  concurrency::streams::producer_consumer_buffer<uint8_t> body;
  std::shared_ptr<StreamEnd> end = std::make_shared<StreamEnd>();
  int status = 0;
  std::string content_type;
  std::string what;
  std::shared_ptr<TlsDiagnostics> diagnostics;
  std::string pending;
  std::size_t scanned = 0;  // bytes of `pending` known to hold no '\n'
  bool eof = false;
  std::shared_ptr<std::atomic<bool>> canceled = std::make_shared<std::atomic<bool>>(false);

  using traits = concurrency::streams::streambuf<uint8_t>::traits;

  [[noreturn]] void fail(std::exception_ptr e) { throw_transport(e, what, diagnostics.get(), canceled->load()); }

  // After the headers: close `body` when the response completes, remembering a failure.
  void watch_completion() {
    auto buffer = body;
    auto ending = end;
    response.content_ready().then([buffer, ending](pplx::task<http::http_response> t) mutable {
      try {
        t.get();
      } catch (...) {
        std::lock_guard<std::mutex> lock(ending->mutex);
        ending->error = std::current_exception();
      }
      // Never wait here for close()'s task: this runs on the pplx thread pool, and that task
      // completes through a continuation queued on the same pool (the buffer itself is closed,
      // and the reader woken, synchronously inside close()). At exit the pool is stopped with
      // that continuation still queued and its threads are joined: a wait here never ended and
      // the process hung after the stream had ended (`kubectl trainbench logs -f`).
      try {
        buffer.close(std::ios_base::out).then([](pplx::task<void> closed) {
          try {
            closed.get();  // observed: pplx terminates on an unobserved failure
          } catch (...) {
          }
        });
      } catch (...) {
      }
      {
        std::lock_guard<std::mutex> lock(ending->mutex);
        ending->done = true;
      }
      ending->cv.notify_all();
    });
  }

  // After the buffer's end: waits until the completion handler is through (it is past close(),
  // which woke us, and only sets `done` after it), so that no work of this stream is left on the
  // pool when the reader sees the end (a process may exit right after). The failure, if any.
  std::exception_ptr ended() {
    std::unique_lock<std::mutex> lock(end->mutex);
    end->cv.wait(lock, [this] { return end->done; });
    return end->error;
  }

  // Appends at least one byte to `pending`, or sets eof. Blocks.
  void fill() {
    if (*canceled) throw TransportError(TransportError::Kind::kCanceled, what + ": canceled");
    int c = traits::eof();
    try {
      c = body.bumpc().get();
    } catch (...) {
      fail(std::current_exception());
    }
    if (c == traits::eof()) {
      const std::exception_ptr error = ended();
      if (error) fail(error);
      if (*canceled) throw TransportError(TransportError::Kind::kCanceled, what + ": canceled");
      eof = true;
      return;
    }
    pending += static_cast<char>(c);
    // Take what already arrived without blocking (sbumpc is synchronous and locked).
    try {
      for (int i = 0; i < (1 << 16); ++i) {
        const int d = body.sbumpc();
        if (d == traits::eof() || d == traits::requires_async()) break;
        pending += static_cast<char>(d);
      }
    } catch (...) {
      // Only a closed-with-error buffer throws here, and ours is never closed with one.
    }
  }
};

HttpStream::HttpStream(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpStream::~HttpStream() {
  if (impl_ && !impl_->eof) cancel();
}

int HttpStream::status() const { return impl_->status; }
const std::string& HttpStream::content_type() const { return impl_->content_type; }

bool HttpStream::read_line(std::string& line) {
  auto& im = *impl_;
  for (;;) {
    const auto nl = im.pending.find('\n', im.scanned);
    if (nl != std::string::npos) {
      line.assign(im.pending, 0, nl);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      im.pending.erase(0, nl + 1);
      im.scanned = 0;
      return true;
    }
    im.scanned = im.pending.size();
    if (im.eof) {
      if (im.pending.empty()) return false;
      line = std::move(im.pending);
      im.pending.clear();
      im.scanned = 0;
      return true;
    }
    if (im.pending.size() > kMaxLine) {
      throw TransportError(TransportError::Kind::kProtocol, im.what + ": a line of the answer exceeds 16 MiB");
    }
    im.fill();
  }
}

std::string HttpStream::read_all(std::size_t limit) {
  auto& im = *impl_;
  while (!im.eof && im.pending.size() < limit) im.fill();
  std::string out = std::move(im.pending);
  im.pending.clear();
  im.scanned = 0;
  if (out.size() > limit) out.resize(limit);
  return out;
}

void HttpStream::cancel() { canceler()(); }

std::function<void()> HttpStream::canceler() const {
  auto flag = impl_->canceled;
  auto cts = impl_->cts;
  return [flag, cts]() mutable {
    flag->store(true);
    cts.cancel();
  };
}

std::unique_ptr<HttpStream> Transport::open_stream(const HttpRequest& request, std::chrono::milliseconds idle_timeout) {
  auto& im = *impl_;
  bool refreshed_token = false;
  for (;;) {
    im.rate_limit(request);
    const auto start = std::chrono::steady_clock::now();
    auto s = std::make_unique<HttpStream::Impl>();
    s->what = im.describe(request);
    s->diagnostics = im.tls->diagnostics();
    pplx::task<http::http_response> task;
    try {
      http::http_request req = im.build(request, im.tokens.token());
      req.set_response_stream(s->body.create_ostream());
      // Whole minutes, so that watches with jittered timeouts share a few clients.
      const auto idle = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::ceil<std::chrono::minutes>(std::max(idle_timeout, std::chrono::milliseconds(1000))));
      task = im.client_for(idle)->request(req, s->cts.get_token());
    } catch (const KubeError&) {
      throw;
    } catch (...) {
      throw_transport(std::current_exception(), s->what, s->diagnostics.get(), false);
    }
    const auto timeout = im.timeout_of(request);
    const Waited how = wait_task(task, start + timeout, request.stop, s->cts);
    if (how == Waited::kDeadline) {
      im.log_exchange(request, 0, {}, start, "(stream) timeout");
      throw TransportError(TransportError::Kind::kTimeout,
                           s->what + ": no answer within " + std::to_string(timeout.count()) + " ms");
    }
    try {
      if (how == Waited::kStopped) throw pplx::task_canceled();
      s->response = task.get();
      s->status = s->response.status_code();
      s->content_type = s->response.headers().content_type();
      s->watch_completion();
    } catch (...) {
      im.log_exchange(request, 0, {}, start, "(stream) failed");
      throw_transport(std::current_exception(), s->what, s->diagnostics.get(),
                      how == Waited::kStopped || request.stop.stop_requested());
    }
    im.log_exchange(request, s->status, {}, start, "(stream)");
    auto stream = std::unique_ptr<HttpStream>(new HttpStream(std::move(s)));
    if (stream->status() == 401 && im.tokens.from_file() && !refreshed_token) {
      im.tokens.invalidate();
      refreshed_token = true;
      continue;  // the stream's destructor drops the connection
    }
    return stream;
  }
}

}  // namespace trainbench::kube

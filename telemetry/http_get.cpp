#include "telemetry/http_get.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace trainbench::telemetry {

std::optional<HttpGetResult> http_get(const std::string& host, int port, const std::string& path,
                                      std::chrono::milliseconds deadline, std::size_t max_body_bytes,
                                      std::string* why) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  boost::asio::io_context io;
  beast::tcp_stream stream(io);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(max_body_bytes);
  beast::error_code failed;
  // Asynchronous calls, so that the stream's one deadline covers connect, write and read.
  stream.expires_after(deadline);
  const boost::asio::ip::tcp::endpoint to(boost::asio::ip::make_address(host, failed),
                                          static_cast<unsigned short>(port));
  http::request<http::empty_body> request{http::verb::get, path, 11};
  request.set(http::field::host, host);
  request.set(http::field::connection, "close");
  if (!failed) {
    stream.async_connect(to, [&](beast::error_code ec) {
      if ((failed = ec)) return;
      http::async_write(stream, request, [&](beast::error_code wec, std::size_t) {
        if ((failed = wec)) return;
        // The header first: a declared length over the limit is refused before its body is read.
        http::async_read_header(stream, buffer, parser, [&](beast::error_code hec, std::size_t) {
          if ((failed = hec)) return;
          if (parser.content_length().value_or(0) > max_body_bytes) {
            failed = http::error::body_limit;
            return;
          }
          http::async_read(stream, buffer, parser, [&](beast::error_code rec, std::size_t) { failed = rec; });
        });
      });
    });
    io.run();
  }
  beast::error_code ignored;
  stream.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
  if (!failed && parser.get().body().size() > max_body_bytes) failed = http::error::body_limit;
  if (failed) {
    if (why) *why = "GET http://" + host + ":" + std::to_string(port) + path + ": " + failed.message();
    return std::nullopt;
  }
  return HttpGetResult{static_cast<int>(parser.get().result_int()), parser.get().body()};
}

}  // namespace trainbench::telemetry

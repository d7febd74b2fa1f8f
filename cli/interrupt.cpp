#include "cli/interrupt.hpp"

#include <csignal>
#include <initializer_list>

namespace trainbench {
namespace {

volatile std::sig_atomic_t g_signal = 0;
volatile std::sig_atomic_t g_count = 0;

extern "C" void on_interrupt(int sig) {
  if (g_signal == 0) g_signal = sig;
  g_count = g_count + 1;
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a sleeping poll loop wakes up early
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

int interrupt_signal() { return g_signal; }
int interrupt_count() { return g_count; }
void reset_interrupt() {
  g_signal = 0;
  g_count = 0;
}

}  // namespace trainbench

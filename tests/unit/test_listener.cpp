// The server's listening socket (serve/listener.h): the connections it accepts send each message at
// once, as Core's do.
#include "serve/listener.h"
#include "wire/peer.h"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace ibdkit;

namespace {

// Without TCP_NODELAY a window of small blocks waits on the client's delayed ACK after each one
// (Nagle's rule): a 4,100-block sync of ~500-byte blocks from two `serve` peers took 23 s instead
// of 0.2 s.
TEST(Listener, AcceptedConnectionsSendSmallMessagesAtOnce)
{
    auto listener = Listener::Bind("127.0.0.1", 0);
    ASSERT_TRUE(listener) << listener.error().message;
    auto client = Socket::Connect("127.0.0.1", listener->port(), std::chrono::seconds(5), nullptr);
    ASSERT_TRUE(client) << client.error().message;
    auto accepted = listener->Accept(std::chrono::seconds(5), nullptr);
    ASSERT_TRUE(accepted);
    int on = 0;
    socklen_t len = sizeof on;
    ASSERT_EQ(::getsockopt(accepted->first, IPPROTO_TCP, TCP_NODELAY, &on, &len), 0);
    EXPECT_NE(on, 0);
    ::close(accepted->first);
}

} // namespace

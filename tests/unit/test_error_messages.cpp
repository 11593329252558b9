// SPDX-License-Identifier: Apache-2.0
// Every Error's message is printable and bounded, whatever the parts it quotes: the core builds
// messages from names and values in the caller's input, which may be megabytes or hold control bytes.
#include <gtest/gtest.h>

#include <string>

#include "recur/error.hpp"

namespace {

std::string message_of(const std::string& part) {
  try {
    recur::fail(recur::Error::Code::invalid_argument, "units: expected an integer, got ", part);
  } catch (const recur::Error& e) {
    EXPECT_EQ(e.code(), recur::Error::Code::invalid_argument);
    return e.what();
  }
  ADD_FAILURE() << "fail() returned";
  return {};
}

}  // namespace

TEST(ErrorMessages, ShortMessagesAreKeptAsTheyAre) {
  EXPECT_EQ(message_of("'four' (\xC3\xA9)"), "units: expected an integer, got 'four' (\xC3\xA9)");
}

TEST(ErrorMessages, LongPartsAreCut) {
  const std::string m = message_of(std::string(1 << 20, 'x'));
  EXPECT_LE(m.size(), recur::detail::kMaxMessageBytes + 3);
  EXPECT_EQ(m.rfind("units: expected an integer, got xxx", 0), 0u) << m.substr(0, 80);
  EXPECT_EQ(m.substr(m.size() - 3), "...");
  // A message exactly at the bound is not cut.
  const std::string prefix = "units: expected an integer, got ";
  const std::string fits = message_of(std::string(recur::detail::kMaxMessageBytes - prefix.size(), 'y'));
  EXPECT_EQ(fits.size(), recur::detail::kMaxMessageBytes);
  EXPECT_NE(fits.substr(fits.size() - 3), "...");
}

TEST(ErrorMessages, ControlAndNonUtf8BytesAreEscaped) {
  EXPECT_EQ(message_of(std::string("a\nb\x01\xFF", 5)), "units: expected an integer, got a\\x0Ab\\x01\\xFF");
  // A cut never splits a UTF-8 sequence.
  std::string euros;
  for (int i = 0; i < 2000; ++i) euros += "\xE2\x82\xAC";
  const std::string m = message_of(euros);
  ASSERT_GT(m.size(), 3u);
  const std::string body = m.substr(0, m.size() - 3);
  EXPECT_EQ((body.size() - std::string("units: expected an integer, got ").size()) % 3, 0u);
}

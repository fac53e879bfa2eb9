// The exported collapse metrics: absent below two vectors, then the mean pairwise cosine of
// exactly the vectors observed, under the right labels.
#include "server/observability/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace embedding::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

DocumentResult Doc(std::vector<float> unit_vector, uint32_t tokens) {
  DocumentResult doc;
  doc.collapse_vector = std::move(unit_vector);
  doc.vector = doc.collapse_vector;
  doc.token_count = tokens;
  doc.chunk_count = 1;
  doc.length_bucket = tokens < 64 ? "0-63" : "64-127";
  doc.high_frequency_ratios = {0.5f};
  return doc;
}

TEST(Metrics, MeanCosineIsAbsentUntilTwoVectorsThenExact) {
  Metrics metrics(8);
  ServedModel model;
  model.name = "m";
  EmbedParams params;
  params.temperature = 0.5f;
  EmbedResult one;
  one.documents = {Doc({1, 0, 0}, 10)};
  metrics.ObserveEmbedded(model, params, one);
  std::string text = metrics.Render();
  EXPECT_THAT(text, Not(HasSubstr("embedding_collapse_mean_cosine{")));
  EXPECT_THAT(
      text,
      HasSubstr(
          "embedding_collapse_window_size{length_bucket=\"0-63\",model=\"m\",tempscale=\"on\"} 1"));

  EmbedResult two;
  const float s = std::sqrt(0.5f);
  two.documents = {Doc({s, s, 0}, 12), Doc({0, 0, 1}, 70)};
  metrics.ObserveEmbedded(model, params, two);
  text = metrics.Render();
  // 0-63 holds (1,0,0) and (s,s,0): one pair, cosine s.
  EXPECT_THAT(text, HasSubstr("embedding_collapse_mean_cosine{length_bucket=\"0-63\",model=\"m\","
                              "tempscale=\"on\"} 0.7071"));
  EXPECT_THAT(text, Not(HasSubstr("embedding_collapse_mean_cosine{length_bucket=\"64-127\"")));
  EXPECT_THAT(text, HasSubstr("embedding_documents_total{length_bucket=\"0-63\",model=\"m\","
                              "strategy=\"chunk_mean\",tempscale=\"on\"} 2"));
}

// Fields a TEI route ignored: counted by method and name through the call hook; a client picks
// the names, so each method keeps 64 and counts the rest as "_other", each cut at 64 bytes on
// a character boundary.
TEST(Metrics, IgnoredFieldsAreCountedByMethodAndNameWithBoundedNames) {
  Metrics metrics(8);
  CallRecord call;
  call.method = "TEI/Embed";
  call.ignored_fields = {"bogus", "bogus", "temprature"};
  ::testing::internal::CaptureStderr();
  metrics.CallHooks().on_call_done(call);
  metrics.ObserveIgnoredFields("TEI/Embed", {"bogus"});
  const std::string log = ::testing::internal::GetCapturedStderr();
  // Each name logged once, however often it comes.
  EXPECT_NE(log.find("'bogus'"), std::string::npos) << log;
  EXPECT_EQ(log.find("'bogus'"), log.rfind("'bogus'")) << log;
  EXPECT_THAT(log, HasSubstr("TEI/Embed: ignored the body field 'temprature'"));
  std::string text = metrics.Render();
  EXPECT_THAT(text, HasSubstr("embedding_http_ignored_fields_total{field=\"bogus\",method=\"TEI/"
                              "Embed\"} 3"));
  EXPECT_THAT(text, HasSubstr("embedding_http_ignored_fields_total{field=\"temprature\",method="
                              "\"TEI/Embed\"} 1"));
  call.ignored_fields.clear();
  for (int i = 0; i < 100; ++i) call.ignored_fields.push_back("f" + std::to_string(i));
  call.ignored_fields.push_back(std::string(63, 'x') + "\xc3\xa9");  // é across byte 64
  metrics.ObserveIgnoredFields("TEI/Embed", call.ignored_fields);
  text = metrics.Render();
  // bogus and temprature, then f0..f61 take the 64 names; f62..f99 and the long one are _other.
  EXPECT_THAT(text, HasSubstr("field=\"f61\""));
  EXPECT_THAT(text, Not(HasSubstr("field=\"f62\"")));
  EXPECT_THAT(text, HasSubstr("embedding_http_ignored_fields_total{field=\"_other\",method=\"TEI/"
                              "Embed\"} 39"));
  // Another method has its own 64.
  metrics.ObserveIgnoredFields("TEI/Rerank", {std::string(63, 'x') + "\xc3\xa9"});
  EXPECT_THAT(metrics.Render(), HasSubstr("{field=\"" + std::string(63, 'x') +
                                          "\",method=\"TEI/Rerank\"} 1"));
}

TEST(Metrics, AutoRequestsHaveTheirOwnSeriesAndEverySequencesTau) {
  Metrics metrics(8);
  ServedModel model;
  model.name = "m";
  EmbedParams params;
  params.auto_temperature = true;
  EmbedResult result;
  result.documents = {Doc({1, 0, 0}, 70)};
  result.documents[0].sequence_temperatures = {0.8f, 0.8f, 0.95f};
  metrics.ObserveEmbedded(model, params, result);
  const std::string text = metrics.Render();
  EXPECT_THAT(text, HasSubstr("embedding_documents_total{length_bucket=\"64-127\",model=\"m\","
                              "strategy=\"chunk_mean\",tempscale=\"auto\"} 1"));
  EXPECT_THAT(text,
              HasSubstr("embedding_temperature_count{length_bucket=\"64-127\",model=\"m\"} 3"));
  EXPECT_THAT(text,
              HasSubstr("embedding_temperature_sum{length_bucket=\"64-127\",model=\"m\"} 2.55"));
}

// A GPU's memory is read at every scrape, by kind; a server on the CPU exports none of it.
TEST(Metrics, DeviceMemoryIsReadAtEachScrapeOnlyWhereThereIsADevice) {
  Metrics cpu(8);
  EXPECT_THAT(cpu.Render(), Not(HasSubstr("embedding_device_memory_bytes{")));
  Metrics gpu(8);
  int64_t allocated = 100;
  gpu.SetDeviceMemorySource("cuda:1", [&allocated] {
    model_store::DeviceMemory memory;
    memory.allocated_bytes = allocated;
    memory.reserved_bytes = 300;
    memory.free_bytes = 700;
    memory.total_bytes = 1000;
    return memory;
  });
  std::string text = gpu.Render();
  for (const char* line :
       {"{device=\"cuda:1\",kind=\"allocated\"} 100", "{device=\"cuda:1\",kind=\"reserved\"} 300",
        "{device=\"cuda:1\",kind=\"free\"} 700", "{device=\"cuda:1\",kind=\"total\"} 1000"}) {
    EXPECT_THAT(text, HasSubstr(std::string("embedding_device_memory_bytes") + line));
  }
  allocated = 250;
  EXPECT_THAT(gpu.Render(),
              HasSubstr("embedding_device_memory_bytes{device=\"cuda:1\",kind=\"allocated\"} 250"));
}

}  // namespace
}  // namespace embedding::server

// The metrics registry's families that come and go (the operator's gauges) and their
// order: what the operator's /metrics needs of it.
#include <gtest/gtest.h>

#include "http_server/metrics.h"

namespace cincinnati::http_server {
namespace {

TEST(MetricsRegistryTest, FamiliesWithoutHelpOrSamplesAndInNameOrder) {
  Registry r("", Registry::Order::kName);
  auto& b = r.AddGauge("b_gauge", "", {"cluster", "version"}, WhenEmpty::kHidden);
  r.AddGauge("c_hidden", "", {"cluster"}, WhenEmpty::kHidden);
  r.AddCounter("a_total", "Counted", {"cluster"});
  b.With({"x", "1"}).Set(2);
  b.With({"a", "1"}).Set(0.5);
  EXPECT_EQ(r.Render(),
            "# HELP a_total Counted\n# TYPE a_total counter\n"
            "# TYPE b_gauge gauge\nb_gauge{cluster=\"a\",version=\"1\"} 0.5\nb_gauge{cluster=\"x\",version=\"1\"} 2\n");
}

TEST(MetricsRegistryTest, SeriesAreRemovedByTheLabelsTheyInclude) {
  Registry r("p_");
  auto& g = r.AddGauge("g", "Help", {"cluster", "version"}, WhenEmpty::kHidden);
  g.With({"x", "1"}).Set(1);
  g.With({"x", "2"}).Set(2);
  g.With({"y", "1"}).Set(3);
  g.RemoveMatching({{"nothing", "x"}});  // a label the family lacks matches nothing
  g.RemoveMatching({{"cluster", "x"}, {"version", "2"}});
  double value = 0;
  EXPECT_FALSE(g.Find({"x", "2"}, [&](const Gauge& s) { value = s.value(); }));
  EXPECT_TRUE(g.Find({"y", "1"}, [&](const Gauge& s) { value = s.value(); }));
  EXPECT_EQ(value, 3);
  g.RemoveMatching({{"cluster", "x"}});
  EXPECT_EQ(r.Render(), "# HELP p_g Help\n# TYPE p_g gauge\np_g{cluster=\"y\",version=\"1\"} 3\n");
  g.RemoveMatching({});
  EXPECT_TRUE(g.empty());
  EXPECT_EQ(r.Render(), "");
}

}  // namespace
}  // namespace cincinnati::http_server

#include "postgres/postgres_session.h"

#include <gtest/gtest.h>

namespace cincinnati::postgres {
namespace {

TEST(RedactedConninfoTest, APasswordNeverShows) {
  EXPECT_EQ(RedactedConninfo("postgresql://cincinnati:s3cret@db.example:5432/reports?sslmode=require"),
            "postgresql://cincinnati:***@db.example:5432/reports?sslmode=require");
  EXPECT_EQ(RedactedConninfo("postgres://u:p@h/d"), "postgres://u:***@h/d");
  EXPECT_EQ(RedactedConninfo("host=db user=u password=s3cret dbname=r"), "host=db user=u password=*** dbname=r");
  EXPECT_EQ(RedactedConninfo("postgresql:///r?host=/run/pg&password=s3cret&user=u"), "postgresql:///r?host=/run/pg&password=***&user=u");
}

TEST(RedactedConninfoTest, KeywordValuesWithSpacesOrQuotesAreHiddenWhole) {
  EXPECT_EQ(RedactedConninfo("host=db password = hunter2 dbname=r"), "host=db password = *** dbname=r");
  EXPECT_EQ(RedactedConninfo("host=db password='correct horse' dbname=r"), "host=db password=*** dbname=r");
  EXPECT_EQ(RedactedConninfo("password='it\\'s here' user=u"), "password=*** user=u");
  EXPECT_EQ(RedactedConninfo("password='unterminated"), "password=***");
}

TEST(RedactedConninfoTest, WhatHasNoPasswordIsKept) {
  EXPECT_EQ(RedactedConninfo("postgresql://u@h/d"), "postgresql://u@h/d");
  EXPECT_EQ(RedactedConninfo("postgresql:///d?host=/tmp"), "postgresql:///d?host=/tmp");
  EXPECT_EQ(RedactedConninfo(""), "");
}

}  // namespace
}  // namespace cincinnati::postgres

# Onboarding real files: what rio::import (haven, fread, readxl: datom_sync's reader)
# makes of a file, and what each side reads back from the other's project.

# One file as datom_sync reads it: its data_sha and each column's R class.
r_import <- function(path) {
  d <- suppressWarnings(rio::import(path))
  list(
    data_sha = datom:::.datom_canonical_hash(d)$data_sha,
    classes = lapply(d, function(x) class(x)[1])
  )
}

# The current data_sha of every table of a project.
r_current_hashes <- function(conn) {
  con <- r_conn(conn)
  lst <- datom_list(con, short_hash = FALSE)
  out <- list()
  for (name in lst$name) {
    out[[name]] <- datom_history(con, name, n = 1L, short_hash = FALSE)$data_sha[[1]]
  }
  out
}

# A table read back by R: its columns' classes, R's own hash of it, and per text column
# how many values are "" and how many NA.
r_read_columns <- function(conn, name) {
  df <- datom_read(r_conn(conn), name)
  text <- names(df)[vapply(df, is.character, logical(1))]
  list(
    data_sha = datom:::.datom_canonical_hash(df)$data_sha,
    classes = lapply(df, function(x) class(x)[1]),
    blank = lapply(df[text], function(x) sum(x == "", na.rm = TRUE)),
    missing = lapply(df[text], function(x) sum(is.na(x)))
  )
}

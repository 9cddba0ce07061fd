# Sets on the R side (datom 0.2.0): declare members, write, read back, fetch members.

.r_tags <- function(t) {
  if (is.null(t)) return(NULL)
  lapply(t, function(v) as.character(unlist(v)))
}

# members: list of {store, project, name, version, tags?}, each declared through a reader
# of the member's own project, as datom_member() requires.
r_write_set <- function(conn, members, tags = NULL, message = NULL) {
  recs <- lapply(members, function(m) {
    datom_member(r_reader(m$store, m$project), m$name, m$version, tags = .r_tags(m$tags))
  })
  res <- datom_write_set(r_conn(conn), recs, tags = .r_tags(tags), message = message)
  list(action = res$action, version = res$metadata_sha, data_sha = res$data_sha,
       member_count = res$member_count)
}

r_get_set <- function(conn, name, version = NULL, member_store = NULL) {
  x <- datom_get_set(r_conn(conn), name, version)
  members <- lapply(x$members, function(m) {
    rec <- list(id = m$id, tags = m$tags %||% structure(list(), names = character(0)))
    if (!is.null(member_store)) {
      df <- m$fetch(r_reader(member_store, m$id$project))
      rec$rehash <- datom:::.datom_canonical_hash(df)$data_sha
    }
    rec
  })
  list(name = x$name, project = x$project, version = x$version, data_sha = x$data_sha,
       tags = x$tags %||% structure(list(), names = character(0)), members = members)
}

-- A source's config is typed per source type: keep only the keys each type takes
-- (website: url, indexed, max_pages, crawl{include, exclude, max_depth}; webpage: url,
-- indexed; upload and connector: none). Other keys were never read by the service and
-- could hold secrets or URLs stored unchecked; values of a known key of the wrong JSON
-- type go too. url and indexed were always validated on the way in.
UPDATE "sources" SET "config" = (
  SELECT coalesce(jsonb_object_agg("key", "value"), '{}'::jsonb)
  FROM jsonb_each("config")
  WHERE ("sources"."type" IN ('website', 'webpage') AND "key" IN ('url', 'indexed'))
    OR ("sources"."type" = 'website' AND "key" = 'max_pages' AND jsonb_typeof("value") = 'number'
        AND ("value")::text::numeric BETWEEN 1 AND 1000000 AND ("value")::text::numeric % 1 = 0)
    OR ("sources"."type" = 'website' AND "key" = 'crawl' AND jsonb_typeof("value") = 'object')
)
-- every row once: a row that already follows the rule is written back unchanged
WHERE "config" <> '{}'::jsonb;
--> statement-breakpoint
-- then the crawl options of websites: include and exclude as arrays of at most 50,000 strings of 1 to 2,048
-- characters, max_depth 0 to 100
UPDATE "sources" SET "config" = jsonb_set("config", '{crawl}', (
  SELECT coalesce(jsonb_object_agg("key", "value"), '{}'::jsonb)
  FROM jsonb_each("config"->'crawl')
  WHERE ("key" IN ('include', 'exclude') AND jsonb_typeof("value") = 'array' AND jsonb_array_length("value") <= 50000
         AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements("value") AS "item"
                         WHERE jsonb_typeof("item") <> 'string' OR length("item" #>> '{}') NOT BETWEEN 1 AND 2048))
    OR ("key" = 'max_depth' AND jsonb_typeof("value") = 'number'
        AND ("value")::text::numeric BETWEEN 0 AND 100 AND ("value")::text::numeric % 1 = 0)
))
WHERE "type" = 'website' AND jsonb_typeof("config"->'crawl') = 'object';

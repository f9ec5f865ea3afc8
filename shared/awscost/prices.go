package awscost

// Prices are AWS list prices in US dollars, each with the page it comes
// from and when it was read.
type Prices struct {
	Region string

	// Step Functions Standard: per state transition (every state entered,
	// retries included). https://aws.amazon.com/step-functions/pricing/
	StandardTransition float64
	// Step Functions Express: per request (each started execution) and per
	// GB-second of duration, the duration rounded up to 100 ms and the
	// memory to 64 MB chunks (first tier, the first 1,000 GB-hours a month).
	// https://aws.amazon.com/step-functions/pricing/
	ExpressRequest, ExpressGBSecond float64
	// Lambda: per request, and per GB-second on arm64 (first tier, the
	// first 7.5 billion GB-seconds a month), duration billed per 1 ms.
	// https://aws.amazon.com/lambda/pricing/
	LambdaRequest, LambdaARMGBSecond float64
	// DynamoDB on demand: per write request unit (1 KB; a transaction's
	// item costs 2) and per read request unit (4 KB strongly consistent; an
	// eventually consistent read costs half). Standard table class.
	// https://aws.amazon.com/dynamodb/pricing/on-demand/
	DynamoWRU, DynamoRRU float64
	// API Gateway HTTP API: per request (first 300 million a month, each
	// 512 KB counted as one). https://aws.amazon.com/api-gateway/pricing/
	HTTPRequest float64
	// EventBridge: per custom event published (each 64 KB chunk of an
	// entry). https://aws.amazon.com/eventbridge/pricing/
	EventBridgeEvent float64

	// AsOf is when these figures were written down; Note says how.
	AsOf, Note string
}

// USEast1 are the list prices for us-east-1 (N. Virginia) without free
// tiers or savings plans. They were written from the pricing pages as
// known on the date below, not fetched by any build: check them against
// the pages before quoting a figure. DynamoDB's are the on-demand prices
// after the 50% reduction of 1 November 2024.
var USEast1 = Prices{
	Region:             "us-east-1",
	StandardTransition: 0.025 / 1000,      // $0.025 per 1,000 state transitions
	ExpressRequest:     1.00 / 1_000_000,  // $1.00 per million requests
	ExpressGBSecond:    0.00001667,        // $0.00001667 per GB-second (first 1,000 GB-hours)
	LambdaRequest:      0.20 / 1_000_000,  // $0.20 per million requests
	LambdaARMGBSecond:  0.0000133334,      // $0.0000133334 per GB-second, arm64
	DynamoWRU:          0.625 / 1_000_000, // $0.625 per million write request units
	DynamoRRU:          0.125 / 1_000_000, // $0.125 per million read request units
	HTTPRequest:        1.00 / 1_000_000,  // $1.00 per million requests
	EventBridgeEvent:   1.00 / 1_000_000,  // $1.00 per million custom events
	AsOf:               "2026-12-01",
	Note:               "list prices as known on that date, written by hand (no network when they were recorded); not a quote",
}
